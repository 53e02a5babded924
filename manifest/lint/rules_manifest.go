package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"lifeboat/manifest"
	"lifeboat/providers/checksum"
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
		Summary: "a file's size or content differs from the manifest (every non-weight file is hashed; weights with --deep), or the repository has files the manifest lacks",
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
		n, err := c.Src.Size(c.Ctx, f.Path)
		if f.Data != nil && f.Part != manifest.PartModel {
			// Embedded: the manifest itself carries the bytes the rules check. When the source
			// has the file too (a bundle), it must be those bytes, or the findings are about an
			// old copy.
			if err == nil {
				checkContent(c, f, n)
			}
			continue
		}
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
		case f.Role != manifest.RoleWeights || c.Deep:
			checkContent(c, f, n)
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

// checkContent hashes a file of the source and reports manifest-stale when its digest is not the
// manifest's: BLAKE3 where the manifest records it (~3× faster per core than SHA-256, so that
// --deep over the weights costs less in CI), else SHA-256.
func checkContent(c *Context, f manifest.File, size int64) {
	alg := f.Sums.Proof()
	h := checksum.New(alg)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		n, err := c.Src.ReadAt(c.Ctx, f.Path, buf[:min(int64(len(buf)), size-off)], off)
		h.Write(buf[:n])
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off == size) {
			c.Errorf(f.Path, "check permissions on the file", "cannot read %s: %v", f.Path, err)
			return
		}
		if n == 0 {
			break
		}
	}
	got, want := checksum.Sum(alg, h), f.Sums.Get(alg)
	if checksum.Equal(alg, got, want) {
		return
	}
	msg := fmt.Sprintf("%s: the content differs from the manifest (%s %.12s…, manifest %.12s…)", f.Path, alg, got, want)
	if f.Data != nil && f.Part != manifest.PartModel {
		msg += "; the other findings check the manifest's embedded copy, not this file"
	}
	c.add(Finding{Rule: "manifest-stale", Severity: Error, Path: f.Path, Message: msg, Hint: staleHint})
}

func sizeMsg(p string, want, got int64) string {
	return fmt.Sprintf("%s: manifest says %d bytes, repository has %d", p, want, got)
}
