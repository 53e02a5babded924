package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// Every command's --help has examples.
func TestEveryCommandHasExamples(t *testing.T) {
	a := &app{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || (c.HasParent() && c.Parent().Name() == "completion") {
			return
		}
		if c.Example == "" {
			t.Errorf("%s --help has no examples", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
}
