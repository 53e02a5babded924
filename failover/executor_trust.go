package failover

import (
	"context"

	"lifeboat/manifest"
	"lifeboat/manifest/signature"
)

// enforceTrust is Run's trust gate: a run that moves traffic to the fleet's replicas (evacuate,
// spill: not a restore or an abort, which go back to the baseline) is refused, before the lock
// is taken, when the fleet's trust: requires a signed manifest and no accepted key signed it.
// The manifest is read with OpenSigned (nil: a local file); a check the caller made already
// (Trusted) is not repeated.
func (e *Executor) enforceTrust(ctx context.Context, kind EventKind) error {
	if kind == Restore || kind == Abort || e.Trusted != nil || e.Fleet == nil || e.Fleet.Trust == nil {
		return nil
	}
	pol := signature.FleetPolicy(e.Fleet.Trust.Keys, e.Fleet.Trust.Require, e.Fleet.File)
	got, err := pol.EnforceAt(ctx, e.OpenSigned, e.Fleet.Model.Manifest, manifest.MaxManifestBytes, "failover run")
	if err != nil {
		return err
	}
	switch {
	case got.Warning != "" && e.Warn != nil:
		e.Warn(got.Warning)
	case got.Warning != "":
		e.log().Warn(got.Warning)
	default:
		e.log().Info("manifest signature verified", "manifest", got.Check.Subject, "digest", got.Check.Digest, "key", got.Check.KeyID)
	}
	e.Trusted = got
	return nil
}
