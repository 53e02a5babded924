package enginesim

import (
	"fmt"
	"path/filepath"

	"lifeboat/manifest/modelrepo"
)

// checkServingFiles fails where vLLM's start-up fails on files the model's config needs besides
// the weights: with --trust-remote-code, transformers imports every auto_map class from
// "<module>.py" in the model directory; a multimodal model (a vision_config) has its processor
// loaded, which needs preprocessor_config.json (or processor_config.json).
func (m *Model) checkServingFiles() error {
	if m.Engine.TrustRemoteCode {
		am, _ := m.Config.Raw["auto_map"].(map[string]any)
		for _, ref := range modelrepo.AutoMapRefs(am) {
			mod, otherRepo := modelrepo.AutoMapModule(ref)
			if otherRepo || mod == "" {
				continue // another Hub repository is fetched online, not from the model directory
			}
			if !fileExists(filepath.Join(m.Dir, filepath.FromSlash(mod)+".py")) {
				return loadErr("config", "OSError: %s does not appear to have a file named %s.py (auto_map %s in config.json, loaded because of --trust-remote-code)", m.Dir, mod, ref)
			}
		}
	}
	if _, vision := m.Config.Raw["vision_config"]; vision {
		if !fileExists(filepath.Join(m.Dir, "preprocessor_config.json")) && !fileExists(filepath.Join(m.Dir, "processor_config.json")) {
			return loadErr("config", "OSError: Can't load image processor for '%s'. Make sure '%s' is the correct path to a directory containing a preprocessor_config.json file (config.json declares a vision_config)", m.Dir, m.Dir)
		}
	}
	return nil
}

// checkRopeScaling fails as vLLM's config patch does on a rope_scaling it cannot read: without
// rope_type (or the legacy type), or with both disagreeing.
func (m *Model) checkRopeScaling() error {
	rs, ok := m.Config.Text["rope_scaling"].(map[string]any)
	if !ok {
		return nil
	}
	modern, hasModern := rs["rope_type"].(string)
	legacy, hasLegacy := rs["type"].(string)
	switch {
	case hasModern && hasLegacy && modern != legacy:
		return loadErr("config", "%s", fmt.Sprintf("ValueError: Found conflicts between 'rope_type=%s' (modern field) and 'type=%s' (legacy field). You should only specify one of them.", modern, legacy))
	case !hasModern && !hasLegacy:
		return loadErr("config", "ValueError: rope_scaling should have a 'rope_type' key (config.json rope_scaling: %v)", rs)
	}
	return nil
}
