package lint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// Severity of a finding. Any error makes the lint fail (a problem found).
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem found by one rule. Path is a bundle path (model/…, engine/…, deploy/…)
// or a directory of the bundle ("model/").
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Path     string   `json:"path"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint"`
}

// Rule is one check. ID is stable: CI configurations and suppressions refer to it.
type Rule struct {
	ID       string
	Severity Severity         // the severity of its usual finding (a rule may also emit the other)
	Summary  string           // one line for --help, docs/lint-rules.md and JUnit
	Hint     string           // default hint, used when a finding has none
	Check    func(c *Context) // nil when another rule's pass emits this rule's findings; rules run one at a time
}

// Report is the result of a lint run.
type Report struct {
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
}

// Rules returns every rule in id order.
func Rules() []Rule {
	var all []Rule
	for _, set := range [][]Rule{manifestRules, modelRules, engineRules} {
		all = append(all, set...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all
}

// Source gives read access to the files of a bundle by bundle path.
type Source interface {
	// Size returns the size of the file, or an error wrapping fs.ErrNotExist.
	Size(ctx context.Context, path string) (int64, error)
	// ReadAt reads len(p) bytes at offset off, like io.ReaderAt.
	ReadAt(ctx context.Context, path string, p []byte, off int64) (int, error)
}

// Lister is implemented by sources that can enumerate their files, so the lint can report files
// present in the repository but absent from the manifest.
type Lister interface {
	List(ctx context.Context) ([]string, error)
}

// Options tune a lint run.
type Options struct {
	Log *slog.Logger
	// Deep hashes the weight files too (every other file is always hashed: they are small), so
	// that bytes that rotted under an unchanged size are found.
	Deep bool
}

// Run applies every rule to the manifest and the files src serves.
func Run(ctx context.Context, m *manifest.Manifest, src Source, log *slog.Logger) *Report {
	return RunWith(ctx, m, src, Options{Log: log})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, m *manifest.Manifest, src Source, o Options) *Report {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Context{Ctx: ctx, Manifest: m, Src: src, Log: log, Deep: o.Deep, cache: map[string]cached{}}
	for _, r := range Rules() {
		if r.Check == nil {
			continue
		}
		c.rule = r
		func() {
			defer func() {
				// A rule must never take the lint down; report its failure as a finding instead.
				if p := recover(); p != nil {
					c.add(Finding{Rule: r.ID, Severity: Error, Path: "", Message: fmt.Sprintf("internal error in rule %s: %v", r.ID, p), Hint: "please report this as a Lifeboat bug"})
				}
			}()
			r.Check(c)
		}()
	}
	rep := &Report{Findings: c.findings}
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Severity != b.Severity {
			return a.Severity == Error
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Rule < b.Rule
	})
	for _, f := range rep.Findings {
		if f.Severity == Error {
			rep.Errors++
		} else {
			rep.Warnings++
		}
	}
	return rep
}

// Context is what a rule sees: the manifest, the files, and parsed artifacts cached across rules.
type Context struct {
	Deep     bool // hash weight files too (Options.Deep)
	Ctx      context.Context
	Manifest *manifest.Manifest
	Src      Source
	Log      *slog.Logger

	rule     Rule
	findings []Finding
	mu       sync.Mutex
	cache    map[string]cached
}

type cached struct {
	v   any
	err error
}

// Memo computes a value once per lint run and shares it between rules.
func (c *Context) Memo(key string, f func() (any, error)) (any, error) {
	c.mu.Lock()
	if v, ok := c.cache[key]; ok {
		c.mu.Unlock()
		return v.v, v.err
	}
	c.mu.Unlock()
	v, err := f()
	c.mu.Lock()
	c.cache[key] = cached{v, err}
	c.mu.Unlock()
	return v, err
}

// Errorf records an error finding of the running rule.
func (c *Context) Errorf(path, hint, format string, args ...any) {
	c.add(Finding{Severity: Error, Path: path, Message: fmt.Sprintf(format, args...), Hint: hint})
}

// Warnf records a warning finding of the running rule.
func (c *Context) Warnf(path, hint, format string, args ...any) {
	c.add(Finding{Severity: Warning, Path: path, Message: fmt.Sprintf(format, args...), Hint: hint})
}

func (c *Context) add(f Finding) {
	if f.Rule == "" {
		f.Rule = c.rule.ID
	}
	if f.Hint == "" {
		f.Hint = c.rule.Hint
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The engine rules run on the engine config and on each deployment's merged settings; a
	// setting both share gives the same finding once.
	for _, g := range c.findings {
		if g == f {
			return
		}
	}
	c.findings = append(c.findings, f)
}

// ModelFiles returns the manifest's model files keyed by their path relative to the model root
// (without the "model/" prefix).
func (c *Context) ModelFiles() map[string]manifest.File {
	v, _ := c.Memo("modelfiles", func() (any, error) {
		out := map[string]manifest.File{}
		for _, f := range c.Manifest.PartFiles(manifest.PartModel) {
			out[strings.TrimPrefix(f.Path, "model/")] = f
		}
		return out, nil
	})
	return v.(map[string]manifest.File)
}

// HasModelFile reports whether the manifest lists model/rel.
func (c *Context) HasModelFile(rel string) bool {
	_, ok := c.ModelFiles()[rel]
	return ok
}

// MaxReadFile bounds whole-file reads by rules (tokenizer.json of large vocabularies is ~20 MB).
const MaxReadFile = 256 << 20

// ReadFile returns the whole content of a bundle file: the manifest's embedded data for engine and
// deployment files, else the source's bytes. Model files are always read from the source, even
// those the manifest embeds (small configs), so findings describe what a replica will serve.
// Results are cached.
func (c *Context) ReadFile(path string) ([]byte, error) {
	v, err := c.Memo("file:"+path, func() (any, error) {
		if f, ok := c.Manifest.File(path); ok && f.Data != nil && f.Part != manifest.PartModel {
			return f.Data, nil
		}
		if c.Src == nil {
			return nil, fmt.Errorf("%s: no source to read it from: %w", path, fs.ErrNotExist)
		}
		n, err := c.Src.Size(c.Ctx, path)
		if err != nil {
			return nil, err
		}
		if n > MaxReadFile {
			return nil, fmt.Errorf("%s: %d bytes is more than the lint reads (%d)", path, n, MaxReadFile)
		}
		buf := make([]byte, n)
		if _, err := c.Src.ReadAt(c.Ctx, path, buf, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return buf, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// readerAt adapts a Source file to io.ReaderAt for header parsers.
type readerAt struct {
	c    *Context
	path string
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return r.c.Src.ReadAt(r.c.Ctx, r.path, p, off)
}

// ReaderAt returns an io.ReaderAt over a bundle file of the source.
func (c *Context) ReaderAt(path string) io.ReaderAt { return readerAt{c, path} }

// ModelConfig returns the parsed model/config.json (cached). A nil config with a nil error means
// the manifest lists no config.json.
func (c *Context) ModelConfig() (*modelrepo.ModelConfig, error) {
	v, err := c.Memo("config.json", func() (any, error) {
		if !c.HasModelFile("config.json") {
			return (*modelrepo.ModelConfig)(nil), nil
		}
		data, err := c.ReadFile("model/config.json")
		if err != nil {
			return nil, err
		}
		return modelrepo.ParseModelConfig(data, "model/config.json")
	})
	if err != nil {
		return nil, err
	}
	return v.(*modelrepo.ModelConfig), nil
}
