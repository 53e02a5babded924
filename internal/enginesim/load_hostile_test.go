package enginesim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"lifeboat/internal/sample"
)

// TestLoadReadsOnlyBoundedRegularFiles: issue 9 item 7. A model directory is input: a FIFO as
// config.json used to hang Load (and the open ignored SIGINT/SIGTERM), /dev/zero took gigabytes.
// Every file Load reads whole is now a regular file under a size limit, and a shard or adapter
// that is a FIFO or device is refused without being opened for blocking reads.
func TestLoadReadsOnlyBoundedRegularFiles(t *testing.T) {
	fifo := func(t *testing.T, p string) {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	zero := func(t *testing.T, p string) {
		os.Remove(p)
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	huge := func(t *testing.T, p string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(1 << 40); err != nil { // sparse: 1 TiB of nothing
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file string
		plant      func(*testing.T, string)
		want       string
	}{
		{"config.json fifo", "config.json", fifo, "not a regular file"},
		{"config.json /dev/zero", "config.json", zero, "not a regular file"},
		{"config.json huge", "config.json", huge, "file too large"},
		{"tokenizer.json fifo", "tokenizer.json", fifo, "not a regular file"},
		{"tokenizer.json huge", "tokenizer.json", huge, "file too large"},
		{"tokenizer_config.json /dev/zero", "tokenizer_config.json", zero, "not a regular file"},
		{"index fifo", "model.safetensors.index.json", fifo, "not a regular file"},
		{"shard fifo", "model-00001-of-00002.safetensors", fifo, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := genRepo(t, sample.Options{NoLoRA: true})
			c.plant(t, filepath.Join(l.ModelDir, c.file))
			_, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %v, want a LoadError saying %q", err, c.want)
			}
		})
	}
	t.Run("engine config fifo", func(t *testing.T) {
		l := genRepo(t, sample.Options{NoLoRA: true})
		fifo(t, l.EngineFile)
		if _, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load = %v", err)
		}
	})
}
