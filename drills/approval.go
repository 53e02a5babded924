package drills

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoApprover is matched by the refusal of a drill whose approval steps nobody can answer.
var ErrNoApprover = errors.New("no approver")

// NoApproverError is CheckApprovals' refusal: which steps of which drill file need approval.
type NoApproverError struct {
	File  string
	Steps []string
}

func (e *NoApproverError) Error() string {
	return fmt.Sprintf("%s: step(s) %s need approval (approve:) and there is no terminal to ask: run on a terminal, or with --approve-all", e.File, strings.Join(e.Steps, ", "))
}

func (e *NoApproverError) Unwrap() error { return ErrNoApprover }

// ApprovalSteps are the steps of the drill that ask for approval before they run, in run order.
// Teardown never asks: putting production back is never held for an answer.
func (d *Drill) ApprovalSteps() []string {
	var need []string
	for _, s := range d.Order() {
		if slices.Contains(d.Approve, s) && s != StepTeardown {
			need = append(need, s)
		}
	}
	return need
}

// CheckApprovals refuses, before anything runs, a drill with approval steps when approvals are
// neither given for all (all: --approve-all) nor can be asked (canAsk: a person at a terminal):
// such a drill would change production and then stop at its first approval step.
func CheckApprovals(d *Drill, all, canAsk bool) error {
	if all || canAsk {
		return nil
	}
	if need := d.ApprovalSteps(); len(need) > 0 {
		return &NoApproverError{File: d.File, Steps: need}
	}
	return nil
}

// Approvals is the approval policy of a run (Runner.Approve and Runner.ApproveVia): every step
// approved when all is set; else each step asked with ask (a person at a terminal); else, no
// one to ask, every approval step refused (the drill fails saying so).
func Approvals(all bool, ask func(ctx context.Context, step string) (bool, error)) (func(context.Context, string) (bool, error), string) {
	switch {
	case all:
		return func(context.Context, string) (bool, error) { return true, nil }, ApproveViaAll
	case ask != nil:
		return ask, ApproveViaTerminal
	}
	return func(_ context.Context, step string) (bool, error) {
		return false, fmt.Errorf("step %s needs approval and there is no terminal to ask: run with --approve-all", step)
	}, ApproveViaNone
}
