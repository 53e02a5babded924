package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Stamped by `make build`, `make release` and `make image` with -ldflags "-X main.…=…". The go
// command records the VCS state itself (-buildvcs) only where .git is a directory — not in a git
// worktree or a source export — so the Makefile passes the commit too; what the go command
// recorded wins when both are there.
var (
	version    = "" // git describe; else the module version
	commit     = "" // git rev-parse HEAD
	commitTime = "" // the commit's committer time, RFC 3339
	dirty      = "" // "true" when the tree had changes not in the commit
	buildDate  = "" // empty in every build the Makefile makes: a build date would make it irreproducible
)

// buildInfo is what a bug report needs about the binary: `lifeboat version -o json` prints it.
type buildInfo struct {
	Version     string `json:"version"`
	VCSRevision string `json:"vcs_revision"`
	VCSTime     string `json:"vcs_time"`
	VCSModified bool   `json:"vcs_modified"`
	// BuildDate is empty for a reproducible build (Reproducible true): the same source and
	// toolchain give the same bytes, so the commit, not a date, identifies the binary.
	BuildDate    string `json:"build_date"`
	Reproducible bool   `json:"reproducible"`
	GoVersion    string `json:"go_version"`
	GOOS         string `json:"goos"`
	GOARCH       string `json:"goarch"`
	BuildTags    string `json:"build_tags"`
	CGOEnabled   bool   `json:"cgo_enabled"`
	Trimpath     bool   `json:"trimpath"`
	Module       string `json:"module"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, VCSRevision: commit, VCSTime: commitTime, VCSModified: dirty == "true",
		BuildDate: buildDate, GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	b.Reproducible = b.BuildDate == ""
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "unknown"
		}
		return b
	}
	b.Module = bi.Main.Path
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified":
			vcs[s.Key] = s.Value
		case "-tags":
			b.BuildTags = s.Value
		case "CGO_ENABLED":
			b.CGOEnabled = s.Value == "1"
		case "-trimpath":
			b.Trimpath = s.Value == "true"
		}
	}
	if rev, ok := vcs["vcs.revision"]; ok {
		b.VCSRevision, b.VCSTime, b.VCSModified = rev, vcs["vcs.time"], vcs["vcs.modified"] == "true"
	}
	return b
}

// versionString is the one-line version: VERSION (REVISION[+dirty], built from a commit of TIME).
func versionString() string {
	b := readBuildInfo()
	s := b.Version
	if b.VCSRevision != "" {
		s += " (" + b.VCSRevision
		if b.VCSModified {
			s += "+dirty"
		}
		if b.VCSTime != "" {
			s += ", built from a commit of " + b.VCSTime
		}
		s += ")"
	}
	return s
}

// versionReport is `lifeboat version`'s text: the one-line version, then one field a line.
func versionReport() string {
	b := readBuildInfo()
	orNone := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	rev := "unknown (built without VCS information)"
	if b.VCSRevision != "" {
		rev = b.VCSRevision
		if b.VCSModified {
			rev += " (dirty: the tree had uncommitted changes)"
		}
	}
	date := "reproducible (no build date stamped; the commit identifies the source)"
	if b.BuildDate != "" {
		date = b.BuildDate
	}
	onOff := map[bool]string{true: "on", false: "off"}
	var w strings.Builder
	fmt.Fprintf(&w, "lifeboat %s\n", versionString())
	fmt.Fprintf(&w, "  commit:      %s\n", rev)
	fmt.Fprintf(&w, "  commit time: %s\n", orNone(b.VCSTime))
	fmt.Fprintf(&w, "  build date:  %s\n", date)
	fmt.Fprintf(&w, "  go:          %s\n", b.GoVersion)
	fmt.Fprintf(&w, "  platform:    %s/%s\n", b.GOOS, b.GOARCH)
	fmt.Fprintf(&w, "  build tags:  %s\n", orNone(b.BuildTags))
	fmt.Fprintf(&w, "  cgo:         %s, trimpath: %s\n", onOff[b.CGOEnabled], onOff[b.Trimpath])
	return w.String()
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Lifeboat version and build details (for a bug report)",
		Long: "Print what a bug report needs: the version, the git commit (and whether the tree was dirty), " +
			"the commit time, the build date (none: release builds are reproducible), the Go version, " +
			"the platform (GOOS/GOARCH) and the build tags.",
		Example: `  lifeboat version
  lifeboat --version
  lifeboat version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if a.output == "json" {
				return a.writeJSON(readBuildInfo())
			}
			fmt.Fprint(a.stdout, versionReport())
			return nil
		},
	}
}
