package verify

import (
	"context"

	"lifeboat/manifest"
	"lifeboat/providers"
)

// Settle proves, by reading every byte, what a quick verification of s could not: the files it
// left UNVERIFIED because the store keeps no comparable native checksum (a local directory, an
// Azure blob without Content-MD5, an S3 multipart ETag). Every other file keeps quick's verdict;
// the UNVERIFIED ones take deep mode's (OK, CORRUPT, or ERROR when they cannot be read), and the
// replica's counts and status are recomputed. A quick result with nothing UNVERIFIED, or one
// whose replica could not be listed, is returned as it is: nothing is read.
//
// It is deep mode on a part of the manifest, so `check --deep` costs the bytes of the files
// that need it, not of the whole replica.
func Settle(ctx context.Context, m *manifest.Manifest, s providers.Store, quick ReplicaResult, o Options) ReplicaResult {
	if quick.Counts[StatusUnverified] == 0 || quick.Status == ReplicaUnreachable {
		return quick
	}
	todo := map[string]bool{}
	for _, f := range quick.Files {
		if f.Status == StatusUnverified {
			todo[f.Path] = true
		}
	}
	sub := &manifest.Manifest{OCI: m.OCI, Model: m.Model}
	for _, f := range m.Files {
		if todo[f.Path] {
			sub.Files = append(sub.Files, f)
		}
	}
	r := newRunner(o)
	if r.o.StallTimeout > 0 {
		s = providers.WithStallGuard(s, r.o.StallTimeout)
	}
	deep := r.judge(ctx, sub, s, ModeDeep, r.listReplica(ctx, s))
	byPath := make(map[string]FileResult, len(deep.Files))
	for _, f := range deep.Files {
		if todo[f.Path] {
			byPath[f.Path] = f
		}
	}
	out := quick
	out.Files = make([]FileResult, len(quick.Files))
	for i, f := range quick.Files {
		if d, ok := byPath[f.Path]; ok {
			f = d
		}
		out.Files[i] = f
	}
	out.BytesRead += deep.BytesRead
	out.Warnings = append(append([]string(nil), quick.Warnings...), deep.Warnings...)
	if out.Error == "" && deep.Error != "" {
		out.Error, out.ErrorKind, out.Err = deep.Error, deep.ErrorKind, deep.Err
	}
	seconds := quick.Seconds + deep.Seconds
	out.finishCounts()
	out.Seconds = seconds
	return out
}
