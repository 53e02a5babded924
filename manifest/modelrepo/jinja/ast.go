package jinja

// node is a statement of the template body.
type node interface{}

type (
	textNode   struct{ s string }
	outputNode struct{ e expr }
	ifNode     struct {
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		line    int
		targets []string
		iter    expr
		cond    expr // the "if" filter of the loop; nil for none
		body    []node
		els     []node
	}
	setNode struct {
		line   int
		target []string // one name, several (tuple unpacking), or [ns, attr] when attr != ""
		attr   string
		value  expr
		body   []node      // {% set x %}…{% endset %} when value is nil
		filter *filterExpr // {% set x | f %}: the filters applied to the body, or nil
	}
	macroNode struct {
		name     string
		params   []string
		defaults map[string]expr
		body     []node
	}
	callBlockNode struct {
		call expr
		body []node
	}
	filterBlockNode struct {
		filter *filterExpr // the last filter; its x is the one before, nil for the first
		body   []node
	}
	breakNode    struct{}
	continueNode struct{}
)

// expr is an expression; line is kept for error messages.
type expr interface{}

type (
	literal  struct{ v any }
	nameExpr struct {
		line int
		name string
	}
	attrExpr struct {
		line int
		obj  expr
		name string
	}
	indexExpr struct {
		line     int
		obj, key expr
	}
	sliceExpr struct {
		line         int
		obj          expr
		lo, hi, step expr // nil when omitted
	}
	callExpr struct {
		line   int
		fn     expr
		args   []expr
		kwargs []kwarg
	}
	filterExpr struct {
		line   int
		x      expr // nil for the first filter of a filter block or block set
		name   string
		args   []expr
		kwargs []kwarg
	}
	testExpr struct {
		line   int
		x      expr
		name   string
		args   []expr
		negate bool
	}
	unaryExpr struct {
		op string
		x  expr
	}
	binExpr struct {
		line int
		op   string
		a, b expr
	}
	condExpr struct {
		then, cond, els expr // els nil: undefined
	}
	listExpr  struct{ items []expr }
	tupleExpr struct{ items []expr }
	dictExpr  struct{ keys, vals []expr }
)

type kwarg struct {
	name string
	val  expr
}
