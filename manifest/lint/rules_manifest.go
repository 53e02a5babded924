package lint

import (
	"errors"
	"fmt"
	"io/fs"

	"lifeboat/manifest"
)

// manifestRules compare the manifest with the files it describes.
var manifestRules = []Rule{
	{
		ID: "manifest-file-missing", Severity: Error,
		Summary: "a file the manifest lists is absent from the repository being linted",
		Hint:    "restore the file, or rebuild the manifest if it was removed on purpose",
		Check:   checkManifestFiles,
	},
	{
		ID: "manifest-stale", Severity: Error,
		Summary: "a file's size differs from the manifest, or the repository has files the manifest lacks",
		Hint:    staleHint,
		// no Check: its findings come from the same pass as manifest-file-missing
	},
}

const staleHint = "rebuild the manifest (lifeboat manifest build) after changing the repository"

func checkManifestFiles(c *Context) {
	if c.Src == nil {
		return
	}
	for _, f := range c.Manifest.Files {
		if f.Data != nil {
			continue // embedded: the manifest itself carries the bytes
		}
		n, err := c.Src.Size(c.Ctx, f.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if f.Part != manifest.PartModel {
				continue // engine/deploy files are only checkable from a bundle directory
			}
			c.Errorf(f.Path, "", "%s is listed in the manifest (%d bytes, role %s) but missing from the repository", f.Path, f.Size, f.Role)
		case err != nil:
			c.Errorf(f.Path, "check permissions on the file", "cannot stat %s: %v", f.Path, err)
		case n != f.Size:
			c.add(Finding{Rule: "manifest-stale", Severity: Error, Path: f.Path, Message: sizeMsg(f.Path, f.Size, n), Hint: staleHint})
		}
	}
	l, ok := c.Src.(Lister)
	if !ok {
		return
	}
	present, err := l.List(c.Ctx)
	if err != nil {
		c.Errorf("model/", "fix the repository so it can be walked", "cannot list the repository: %v", err)
		return
	}
	for _, p := range present {
		if _, ok := c.Manifest.File(p); !ok {
			c.add(Finding{Rule: "manifest-stale", Severity: Warning, Path: p, Message: p + " is in the repository but not in the manifest, so no replica will carry it", Hint: staleHint})
		}
	}
}

func sizeMsg(p string, want, got int64) string {
	return fmt.Sprintf("%s: manifest says %d bytes, repository has %d", p, want, got)
}
