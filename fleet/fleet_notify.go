package fleet

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet/notify"
)

// notifyHooks decodes `notify:`, a list of webhooks:
//
//	notify:
//	  - {name: oncall, url_env: SLACK_WEBHOOK_URL, format: slack, events: [start, hold, refused, done]}
//	  - {url_file: /run/secrets/dr-webhook, format: json, timeout: 3s}
//
// A webhook URL is a secret, so it is never written in the fleet file: url: is an error that
// says so, and exactly one of url_env and url_file is required.
func (p *fleetParser) notifyHooks(n *yaml.Node, at string) []notify.Webhook {
	if n.Kind != yaml.SequenceNode {
		p.errf(n.Line, at, "want a list of webhooks ({url_env: VAR, format: slack}), got %s", kindName(n))
		return nil
	}
	var out []notify.Webhook
	names := map[string]bool{}
	for i, item := range n.Content {
		at := fmt.Sprintf("%s[%d]", at, i)
		w := notify.Webhook{Line: item.Line}
		var urlSeen bool
		p.mapping(item, at, false, map[string]func(*yaml.Node, string){
			"name": func(n *yaml.Node, at string) {
				w.Name = p.str(n, at, true)
				if names[w.Name] {
					p.errf(n.Line, at, "webhook %q is named twice", w.Name)
				}
				names[w.Name] = true
			},
			"url": func(n *yaml.Node, at string) {
				urlSeen = true
				p.errf(n.Line, at, "a webhook URL is a secret and does not belong in the fleet file: give url_env: VAR (the variable holding it) or url_file: PATH")
			},
			"url_env": func(n *yaml.Node, at string) {
				if w.URLEnv = p.str(n, at, true); w.URLEnv != "" && !envNameRE.MatchString(w.URLEnv) {
					p.errf(n.Line, at, "want the name of an environment variable, got %q", w.URLEnv)
				}
			},
			"url_file": func(n *yaml.Node, at string) { w.URLFile = p.path(n, at) },
			"format": func(n *yaml.Node, at string) {
				w.Format = p.str(n, at, true)
				if w.Format != "" && w.Format != notify.FormatSlack && w.Format != notify.FormatJSON {
					p.errf(n.Line, at, "want slack or json, got %q", w.Format)
				}
			},
			"events": func(n *yaml.Node, at string) {
				short := notifyEventNames()
				if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
					p.errf(n.Line, at, "an empty list tells of nothing: leave events out to be told of every kind, or list some of %s", strings.Join(short, ", "))
					return
				}
				for j, e := range p.Checker.StrList(n, at, "event kinds") {
					if !slices.Contains(short, e) {
						p.errf(n.Content[j].Line, fmt.Sprintf("%s[%d]", at, j), "unknown event %q (events: %s)", e, strings.Join(short, ", "))
						continue
					}
					w.Events = append(w.Events, e)
				}
			},
			"timeout": func(n *yaml.Node, at string) {
				w.Timeout = p.Duration(n, at)
				if w.Timeout > notify.MaxTimeout {
					p.errf(n.Line, at, "at most %s: a notification never holds a run up for long", notify.MaxTimeout)
				}
			},
		})
		switch {
		case urlSeen:
		case w.URLEnv != "" && w.URLFile != "":
			p.errf(item.Line, at, "give one of url_env and url_file, not both")
		case w.URLEnv == "" && w.URLFile == "" && item.Kind == yaml.MappingNode:
			p.errf(item.Line, at, "url_env: VAR or url_file: PATH is required (where the webhook URL is)")
		}
		if w.Format == "" && item.Kind == yaml.MappingNode {
			p.errf(item.Line, at+".format", "required: slack (Slack-compatible JSON) or json (the generic body)")
		}
		out = append(out, w)
	}
	return out
}

// notifyEventNames are the event names `events:` takes: start, hold, refused, done, failed, drill.
func notifyEventNames() []string {
	var out []string
	for _, k := range notify.Kinds {
		k = strings.TrimPrefix(k, "failover.")
		k = strings.TrimSuffix(k, ".verdict")
		out = append(out, k)
	}
	return out
}
