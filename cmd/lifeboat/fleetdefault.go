package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"lifeboat/failover"
	"lifeboat/fleet"
)

// fleetEnv names the fleet file every command taking --fleet uses when the flag is not given.
const fleetEnv = "LIFEBOAT_FLEET"

// defaultFleet fills --fleet from LIFEBOAT_FLEET when the command takes it and it was not given
// (the flag wins), and says on stderr which fleet is used whenever the variable is set, so that
// an operator whose shell points at staging sees it before acting on prod (or the reverse).
func (a *app) defaultFleet(cmd *cobra.Command) error {
	fl := cmd.Flags().Lookup("fleet")
	if fl == nil {
		return nil
	}
	env := strings.TrimSpace(a.getenv(fleetEnv))
	if env == "" {
		return nil
	}
	if fl.Changed {
		if fl.Value.String() != env && !a.quiet {
			fmt.Fprintf(a.stderr, "lifeboat: fleet %s (from --fleet; %s=%s is not used)\n", fl.Value, fleetEnv, env)
		}
		return nil
	}
	if err := cmd.Flags().Set("fleet", env); err != nil {
		return usageErr("%s=%s: %v", fleetEnv, env, err)
	}
	if !a.quiet {
		fmt.Fprintf(a.stderr, "lifeboat: fleet %s (from %s)\n", env, fleetEnv)
	}
	return nil
}

// registerCompletions completes, for every command, the values of the flags that name
// something in the fleet — regions (--evacuate, --restore, --region), tenant classes (--class)
// — read from the fleet given so far with --fleet (or LIFEBOAT_FLEET), and the rules --override
// may bypass. A fleet that cannot be read completes nothing (never an error in the shell).
func (a *app) registerCompletions(root *cobra.Command) {
	fleetNames := func(pick func(*fleet.Fleet) []string) cobra.CompletionFunc {
		return func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			name := ""
			if fl := cmd.Flags().Lookup("fleet"); fl != nil {
				name = fl.Value.String()
			}
			if name == "" {
				name = strings.TrimSpace(a.getenv(fleetEnv))
			}
			if name == "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			f, err := fleet.Read(name)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, n := range pick(f) {
				if strings.HasPrefix(n, prefix) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	regions := fleetNames(func(f *fleet.Fleet) []string { return f.RegionNames() })
	classes := fleetNames(func(f *fleet.Fleet) []string { return sortedKeys(f.Tenants) })
	rules := func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, r := range failover.Rules {
			if r.Overridable() && strings.HasPrefix(string(r), prefix) {
				out = append(out, string(r))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	byFlag := map[string]cobra.CompletionFunc{
		"evacuate": regions, "restore": regions, "region": regions, "lose": regions,
		"class": classes, "override": rules,
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if fn, ok := byFlag[f.Name]; ok {
				if _, exists := c.GetFlagCompletionFunc(f.Name); !exists {
					_ = c.RegisterFlagCompletionFunc(f.Name, fn)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
