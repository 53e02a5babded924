package main

import "github.com/spf13/cobra"

// The root --help lists the commands by what a person comes to do: the three jobs first, then
// the building blocks they are made of.
var commandGroups = []struct {
	group    cobra.Group
	commands []string
}{
	{cobra.Group{ID: "jobs", Title: "The three jobs:"}, []string{"check", "drill", "failover"}},
	{cobra.Group{ID: "replicas", Title: "Capture and copies (the DR manifest and its replicas):"}, []string{"manifest", "verify", "replicate", "restore"}},
	{cobra.Group{ID: "serving", Title: "Boot and warm readiness:"}, []string{"boot", "probe", "engine-sim", "watch"}},
	{cobra.Group{ID: "other", Title: "Other commands:"}, []string{"demo", "version"}},
}

// rootLong is the root command's help: what Lifeboat is for, its three jobs with the command
// that does each, and the exit codes every command shares.
const rootLong = `Lifeboat keeps multi-region LLM serving on vLLM recoverable. Three jobs:

  release gate      lifeboat check --fleet fleet.yaml
                    in CI before every release: lint the DR manifest, verify every region's replica
  quarterly drill   lifeboat drill run drill.yaml --report DIR
                    lose a region on purpose, with faults; recovery time against the SLA
  on-call failover  lifeboat failover plan|run --fleet fleet.yaml --region REGION
                    move traffic off a region in ramped, residency-safe steps, locked and journaled

Underneath, one DR manifest (an OCI image manifest with ModelPack media types) captures
everything a replica needs — model repository, engine config, deployment files — so that a
missing tokenizer, quantization config, RoPE setting, chat template or LoRA adapter is found in
CI, not during an outage.

Exit codes (every command):
  0  ok
  1  a check found a problem (lint error, mismatch, not warm, SLA missed)
  2  bad input or usage (the message names the file, line or field)
  3  refused for safety
  4  a dependency stayed unreachable after retries
  130  interrupted (Ctrl-C; 143 for SIGTERM): the run stopped before it ended; run it again to resume

Results go to stdout (-o text|json|yaml, and junit where CI consumes it); progress and logs go
to stderr (--log-format text|json). LIFEBOAT_FLEET names the fleet file for every command that
takes --fleet (the flag wins). Shell completion: lifeboat completion bash|zsh|fish|powershell.`

// groupCommands puts every top-level command in its group; a command added without a group
// lands in "Other commands:" (and TestRootHelpGroupsCommands says so).
func groupCommands(root *cobra.Command) {
	byName := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&g.group)
		for _, c := range g.commands {
			byName[c] = g.group.ID
		}
	}
	for _, c := range root.Commands() {
		if id, ok := byName[c.Name()]; ok {
			c.GroupID = id
		} else {
			c.GroupID = "other"
		}
	}
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
}
