package modelrepo

import (
	"sort"
	"strings"
)

// AutoMapRefs lists the class references of a config's auto_map ("module.Class"; a list holds
// [slow, fast], either may be null), sorted. Lint and engine-sim both judge remote code by it:
// with trust-remote-code, transformers imports each one's module from the model directory.
func AutoMapRefs(autoMap map[string]any) []string {
	var out []string
	for _, v := range autoMap {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// AutoMapModule is the module file a reference is imported from, without ".py" ("module.Class"
// → "module"; dots inside a module path become slashes), and whether the reference names another
// Hub repository ("org/repo--module.Class"), which is fetched online rather than read from the
// model directory. "" when ref has no module part.
func AutoMapModule(ref string) (module string, otherRepo bool) {
	if _, rest, cross := strings.Cut(ref, "--"); cross {
		ref, otherRepo = rest, true
	}
	i := strings.LastIndexByte(ref, '.')
	if i <= 0 {
		return "", otherRepo
	}
	return strings.ReplaceAll(ref[:i], ".", "/"), otherRepo
}
