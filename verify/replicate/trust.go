package replicate

import (
	"context"

	"lifeboat/manifest"
	"lifeboat/manifest/signature"
)

// Trust is a restore's trust gate (Options.Trust): Restore enforces Policy on the manifest at
// ManifestRef (read with Open; nil: a local file) before anything is written, and restores the
// manifest parsed from the bytes it verified, not the one it was given. Checked is a check the
// caller already made on the bytes of the manifest it passes: it is not repeated.
type Trust struct {
	Policy      *signature.Policy
	ManifestRef string
	Open        signature.Opener
	Warn        func(string) // told the warning of a policy that does not require (nil: Options.Log)
	Checked     *signature.Enforced
}

// enforce returns the manifest to restore: m, or the verified one.
func (t *Trust) enforce(ctx context.Context, m *manifest.Manifest, o Options) (*manifest.Manifest, error) {
	if t == nil || t.Policy == nil || t.Checked != nil {
		return m, nil
	}
	e, err := t.Policy.EnforceAt(ctx, t.Open, t.ManifestRef, manifest.MaxManifestBytes, "restore")
	if err != nil {
		return nil, err
	}
	if e.Warning != "" {
		if t.Warn != nil {
			t.Warn(e.Warning)
		} else if o.Log != nil {
			o.Log.Warn(e.Warning)
		}
	}
	t.Checked = e
	return manifest.Parse(e.Data, t.ManifestRef)
}
