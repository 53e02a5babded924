package drills

import (
	"context"
	"fmt"

	"lifeboat/manifest"
	"lifeboat/manifest/signature"
)

// EnforceTrust enforces the fleet's trust: on the drill's manifest, once: the manifest read
// with OpenSigned (nil: a local file) must carry a signature by an accepted key (with require:
// false a warning goes to Warn, else the log) and be the bytes the drill acts on — ManifestDigest
// when the caller read and digested them, else Manifest is parsed from the verified bytes. A
// refusal wraps signature.ErrUntrusted. Run calls it, so a caller that does not cannot skip it;
// the CLI calls it earlier, before it prepares the report directory.
func (r *Runner) EnforceTrust(ctx context.Context) error {
	if r.trusted != nil || r.Fleet == nil || r.Fleet.Trust == nil {
		return nil
	}
	ref := r.Fleet.Model.Manifest
	pol := signature.FleetPolicy(r.Fleet.Trust.Keys, r.Fleet.Trust.Require, r.Drill.Fleet)
	e, err := pol.EnforceAt(ctx, r.OpenSigned, ref, manifest.MaxManifestBytes, "drill run")
	if err != nil {
		return err
	}
	if e.Warning != "" {
		if r.Warn != nil {
			r.Warn(e.Warning)
		} else {
			r.log().Warn(e.Warning)
		}
	} else {
		r.log().Info("manifest signature verified", "manifest", e.Check.Subject, "digest", e.Check.Digest, "key", e.Check.KeyID)
	}
	got := DigestBytes(ref, e.Data)
	switch {
	case r.ManifestDigest.Digest == "":
		m, err := manifest.Parse(e.Data, ref)
		if err != nil {
			return err
		}
		r.Manifest, r.ManifestDigest = m, got
	case got.Digest != r.ManifestDigest.Digest:
		return &signature.RefusedError{Action: "drill run", Detail: fmt.Sprintf("the manifest %s changed while it was read (%s, then %s): run the drill again", ref, r.ManifestDigest.Digest, got.Digest)}
	}
	r.trusted = e
	return nil
}
