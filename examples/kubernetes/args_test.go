package kubernetes

import (
	"path"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"lifeboat/internal/testbed"
)

// invocations returns the command line (program name dropped) of every container and init
// container anywhere in the YAML documents of data, as "KIND/NAME container" → args; a
// container whose command is not lifeboat is reported with the command as it is.
func invocations(t *testing.T, file string, data []byte) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	strs := func(v any) []string {
		var s []string
		for _, x := range asList(v) {
			str, _ := x.(string)
			s = append(s, str)
		}
		return s
	}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k != "containers" && k != "initContainers" {
					walk(where, c)
					continue
				}
				for _, ct := range asList(c) {
					m, _ := ct.(map[string]any)
					name, _ := m["name"].(string)
					cmd := strs(m["command"]) // the image's entrypoint (lifeboat) when absent
					if len(cmd) > 0 && path.Base(cmd[0]) == "lifeboat" {
						cmd = cmd[1:]
					}
					out[where+" container "+name] = append(cmd, strs(m["args"])...)
				}
			}
		case []any:
			for _, c := range x {
				walk(where, c)
			}
		}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		meta, _ := doc["metadata"].(map[string]any)
		walk(file+": "+fmtString(doc["kind"])+"/"+fmtString(meta["name"]), doc)
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func fmtString(v any) string { s, _ := v.(string); return s }

// Every container of the manifests runs a command of the lifeboat binary these sources build,
// with flags it takes: a renamed command or flag fails here, not in the cluster at 06:00 on a
// Monday (the API server's dry run checks the manifests' shape, not what the binary accepts).
func TestKubernetesArgsAreLifeboatCommands(t *testing.T) {
	var seen []string
	for f, data := range manifests(t) {
		for where, args := range invocations(t, f, data) {
			seen = append(seen, where+": "+strings.Join(args, " "))
			if p := testbed.InvocationProblem(t, args); p != "" {
				t.Errorf("%s: lifeboat %s: %s", where, strings.Join(args, " "), p)
			}
		}
	}
	sort.Strings(seen)
	// the Job's check and the CronJob's drill at least: a walk that finds nothing proves nothing
	joined := strings.Join(seen, "\n")
	if !strings.Contains(joined, "Job/lifeboat-check container check: check --fleet") ||
		!strings.Contains(joined, "CronJob/lifeboat-drill container drill: drill run") ||
		!strings.Contains(joined, "Deployment/lifeboat-watch container watch: watch --fleet") {
		t.Fatalf("the container command lines found:\n%s", joined)
	}
	t.Logf("checked:\n%s", joined)
}
