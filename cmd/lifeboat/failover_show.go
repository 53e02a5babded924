package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/internal/base/shell"
	"lifeboat/providers"
)

// failoverShowCmd is `failover show PLAN`: a saved plan read by a person (terraform show), with
// the same renderer as `failover plan`, and what the file records about its age and its fleet.
func (a *app) failoverShowCmd() *cobra.Command {
	var fleetArg string
	c := &cobra.Command{
		Use:   "show PLAN [--fleet FILE] [-o text|json]",
		Short: "Print a plan saved by 'failover plan --out' as 'failover plan' prints it (no probe, no change)",
		Long: `Show reads a plan that 'failover plan --out PLAN' saved and prints it as 'failover plan' did
(the same regions table, steps and verdict), after what the file records: when the plan was made
and how old it is, the fleet it was computed from (file and digest), and whether that fleet file
still has the same regions, classes and router. The router state and region signals shown are
those read when the plan was made: 'failover run --plan PLAN' plans again under the lock and
refuses (exit 3, nothing changed) when they no longer give this plan.

--fleet FILE names the fleet to render it with and compare it against (default: the fleet file
the plan records). -o json prints the saved plan itself.

Exit codes: 0 shown (a stale or held plan too: the text says so); 2 the file is not a plan
'failover plan --out' wrote, is cut short, or its plan no longer matches the digest it was
saved with (edited), or the fleet cannot be read.`,
		Example: `  lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --out evac.plan
  lifeboat failover show evac.plan`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			name := args[0]
			sp, err := failover.LoadSavedPlan(name)
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.writeJSON(sp)
			}
			given := fleetArg
			if given == "" {
				given = sp.FleetFile
			}
			f, err := fleet.Read(given)
			if err != nil {
				how := "the fleet file the plan records"
				if fleetArg != "" {
					how = "--fleet"
				}
				return usageErr("%s: cannot render it: %s (%s): %v; name the fleet with --fleet FILE", name, how, providers.Sanitize(given, 200), err)
			}
			showSavedFacts(a.stdout, name, given, sp, f, time.Now())
			return renderPlan(a.stdout, f, given, sp.Plan, nil)
		},
	}
	c.Flags().StringVar(&fleetArg, "fleet", "", "fleet file to render the plan with and compare it against (default: the one the plan records)")
	return c
}

// showSavedFacts prints what a saved plan records about itself: when, from which fleet, its
// digest, and whether fleet f (read from given) is still the fleet it was computed from.
func showSavedFacts(w io.Writer, name, given string, sp *failover.SavedPlan, f *fleet.Fleet, now time.Time) {
	age := now.Sub(sp.Created).Round(time.Second)
	fmt.Fprintf(w, "Saved plan %s\n", name)
	fmt.Fprintf(w, "  made:   %s (%s ago); the router state and signals below are as read then\n", sp.Created.UTC().Format(time.RFC3339), age)
	fmt.Fprintf(w, "  fleet:  %s (digest %s)\n", providers.Sanitize(sp.FleetFile, 200), sp.Fleet)
	if sp.Digest != "" {
		fmt.Fprintf(w, "  digest: %s (the plan matches it)\n", sp.Digest)
	} else {
		fmt.Fprintln(w, "  digest: none (saved before plans carried one: not checked)")
	}
	if d := failover.FleetDigest(f); d == sp.Fleet {
		fmt.Fprintf(w, "  now:    %s has the same regions, classes and router: 'failover run --plan' applies it while the router and signals still give this plan\n", given)
	} else {
		fmt.Fprintf(w, "  STALE:  %s has other regions, classes or router now (digest %.19s…): 'failover run --plan' refuses it. Plan again: %s\n",
			given, d, failover.CommandLine(given, "plan", sp.Plan.Event.Flags(), "--out", shell.Quote(name)))
	}
	fmt.Fprintf(w, "  apply:  %s\n\n", strings.TrimSpace(failover.CommandLine(given, "run", "--plan", shell.Quote(name), "--reason", "'…'")))
}
