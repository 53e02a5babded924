package warm

import (
	"context"
	"log/slog"

	"lifeboat/manifest"
)

// enforceTrust is Boot's trust gate: with a Trust policy (the fleet's trust:, which
// failover.Fleet.BootOptions fills in) and no check made by the caller (Trusted), the manifest
// at ManifestRef is read with OpenSigned (nil: a local file) and verified, and a restore acts on
// the bytes verified (Manifest is parsed from them). A refusal wraps signature.ErrUntrusted.
func (o *BootOptions) enforceTrust(ctx context.Context) error {
	if o.Trust == nil || o.Trusted != nil {
		return nil
	}
	e, err := o.Trust.EnforceAt(ctx, o.OpenSigned, o.ManifestRef, manifest.MaxManifestBytes, "boot")
	if err != nil {
		return err
	}
	switch {
	case e.Warning != "" && o.Warn != nil:
		o.Warn(e.Warning)
	case e.Warning != "":
		slog.Default().Warn(e.Warning)
	}
	if !o.NoRestore {
		m, err := manifest.Parse(e.Data, o.ManifestRef)
		if err != nil {
			return err
		}
		o.Manifest = m
	}
	o.Trusted = e
	return nil
}
