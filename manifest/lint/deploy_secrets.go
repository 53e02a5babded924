package lint

import (
	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// checkDeploySecrets reports the secret values a manifest built before `manifest build` refused
// them still carries in its deployment files (modelrepo.FindSecrets): the file, line and field,
// never the value.
func checkDeploySecrets(c *Context) {
	for _, f := range c.Manifest.PartFiles(manifest.PartDeployment) {
		data, err := c.ReadFile(f.Path)
		if err != nil {
			continue // deploy-yaml-invalid says the file could not be read
		}
		for _, s := range modelrepo.FindSecrets(data) {
			c.Errorf(f.Path, "", "%s:%d: %s is in this manifest and in every replica store it was copied to (the value is not printed)", f.Path, s.Line, s.Describe())
		}
	}
}
