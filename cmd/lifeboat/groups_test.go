package main

import (
	"strings"
	"testing"
)

// The root --help names the three jobs, each with its command, and lists every command under a
// group — the jobs first — with none left in cobra's catch-all "Additional Commands".
func TestRootHelpGroupsCommands(t *testing.T) {
	r := cli(t, nil, "--help")
	if r.code != 0 {
		t.Fatalf("--help: exit %d\n%s", r.code, r.stderr)
	}
	for _, job := range []string{"release gate      lifeboat check", "quarterly drill   lifeboat drill run", "on-call failover  lifeboat failover"} {
		if !strings.Contains(r.stdout, job) {
			t.Errorf("--help does not name the job %q:\n%s", job, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "Additional Commands:") || strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("--help has commands outside a group:\n%s", r.stdout)
	}
	// section title → the commands listed under it, in the order printed
	sections := map[string][]string{}
	var order []string
	cur := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			cur = line
			order = append(order, cur)
		case cur != "" && strings.HasPrefix(line, "  ") && len(strings.Fields(line)) > 1:
			sections[cur] = append(sections[cur], strings.Fields(line)[0])
		case strings.TrimSpace(line) == "":
			cur = ""
		}
	}
	jobs := sections["The three jobs:"]
	if strings.Join(jobs, " ") != "check drill failover" {
		t.Errorf("the jobs group lists %v, want check drill failover", jobs)
	}
	// the command groups: the sections between Usage and Flags that are not Examples
	var groups []string
	after := false
	for _, title := range order {
		switch title {
		case "Usage:":
			after = true
		case "Examples:", "Flags:", "Global Flags:":
		default:
			if after {
				groups = append(groups, title)
			}
		}
	}
	if len(groups) < 4 || groups[0] != "The three jobs:" {
		t.Errorf("want at least 4 command groups, the three jobs first: %v", groups)
	}
	for _, c := range (&app{}).rootCmd().Commands() {
		if c.Hidden {
			continue
		}
		found := ""
		for title, cmds := range sections {
			for _, n := range cmds {
				if n == c.Name() && strings.HasSuffix(title, ":") && title != "Flags:" {
					found = title
				}
			}
		}
		if found == "" {
			t.Errorf("command %s is in no group of --help", c.Name())
		}
	}
	for _, want := range []string{"help", "completion"} {
		if !strings.Contains(strings.Join(sections["Other commands:"], " "), want) {
			t.Errorf("%s is not under \"Other commands:\": %v", want, sections["Other commands:"])
		}
	}
}
