package main

import (
	"context"
	"path"
	"path/filepath"
	"strings"

	"lifeboat/internal/base/editdistance"
	"lifeboat/providers"
	"lifeboat/verify"
)

// maxNearby is how many sibling prefixes a diagnosis suggests.
const maxNearby = 3

// addNearby appends "prefixes nearby: …" to the diagnosis of each replica whose prefix is empty
// (every file MISSING and nothing there: most often a typo in the prefix): the closest names, by
// the one did-you-mean ranking (editdistance.Suggest), among the directories next to it, from one listing of the parent with delimiter
// "/" (one page). Anything that fails here leaves the diagnosis as it was: it is a suggestion.
func (a *app) addNearby(ctx context.Context, rep *verify.Report) {
	for i := range rep.Replicas {
		rr := &rep.Replicas[i]
		if !strings.Contains(rr.Diagnosis, "which is empty") { // verify's wording for an empty prefix
			continue
		}
		if s := a.nearby(ctx, rr.URL); s != "" {
			rr.Diagnosis += "; prefixes nearby: " + s
		}
	}
}

// nearby lists the parent of the store at rawURL and names the siblings closest to its last
// element, as URLs; "" when there is no parent or nothing next to it.
func (a *app) nearby(ctx context.Context, rawURL string) string {
	loc, err := providers.ParseURL(rawURL)
	if err != nil {
		return ""
	}
	var base string
	switch {
	case loc.Scheme == "file":
		base = filepath.Base(loc.Path)
		loc.Path = filepath.Dir(loc.Path)
	case loc.Prefix == "":
		return "" // a bucket's root has no sibling prefixes
	default:
		base = path.Base(loc.Prefix)
		loc.Prefix = strings.TrimPrefix(path.Dir(loc.Prefix), ".")
	}
	parent, err := a.openStore(ctx, loc.String())
	if err != nil {
		return ""
	}
	defer parent.Close()
	names, err := providers.ListDirs(ctx, parent, 1000)
	if err != nil && len(names) == 0 {
		return ""
	}
	names = editdistance.Suggest(base, names, maxNearby)
	for i, n := range names {
		sib := loc
		if sib.Scheme == "file" {
			sib.Path = filepath.Join(loc.Path, n)
		} else {
			sib.Prefix = strings.TrimPrefix(loc.Prefix+"/"+n, "/")
		}
		names[i] = sib.String()
	}
	return strings.Join(names, ", ")
}
