package lint

import (
	"encoding/json"
	"lifeboat/manifest/modelrepo"
	"strings"
)

// checkRemoteCodeMissing: with --trust-remote-code, vLLM (through transformers) imports each
// class an auto_map names from "<module>.py" in the model directory; a module missing from the
// bundle fails start-up on the replica. A "repo--module.Class" entry is fetched from another
// Hub repository, which an offline replica cannot do either.
func checkRemoteCodeMissing(c *Context) {
	if !c.modelEngineOverrides().trustRemoteCode {
		return
	}
	for _, f := range []string{"config.json", "tokenizer_config.json"} {
		if !c.HasModelFile(f) {
			continue
		}
		data, err := c.ReadFile("model/" + f)
		if err != nil {
			continue
		}
		var doc struct {
			AutoMap map[string]any `json:"auto_map"`
		}
		if json.Unmarshal(data, &doc) != nil {
			continue // config-invalid / tokenizer-invalid report it
		}
		for _, ref := range modelrepo.AutoMapRefs(doc.AutoMap) {
			mod, cross := modelrepo.AutoMapModule(ref)
			if cross {
				repo, _, _ := strings.Cut(ref, "--")
				c.Errorf("model/"+f, "", "model/%s: auto_map names %s from another Hub repository (%s): an offline replica cannot fetch it; vendor %s.py into the repository", f, ref, repo, mod)
				continue
			}
			if mod == "" || c.HasModelFile(mod+".py") {
				continue
			}
			c.Errorf("model/"+f, "", "model/%s: auto_map names %s, but model/%s.py is not in the manifest: with trust-remote-code vLLM imports it at start-up and fails", f, ref, mod)
		}
	}
}
