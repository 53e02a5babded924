package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"lifeboat/internal/base/shell"
	"lifeboat/internal/emulators"
	"lifeboat/providers"
)

const (
	bucket = "lifeboat-demo"
	prefix = "llama"
)

func main() {
	dir := flag.String("dir", ".demo/clouds", "where the emulators (and stand-in directories) keep their data")
	envFile := flag.String("env", ".demo/clouds.env", "shell file to write the replica URLs and credentials to")
	watch := flag.Int("watch-pid", 0, "exit when this process has exited")
	flag.Parse()
	if err := run(*dir, *envFile, *watch, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "democlouds:", err)
		os.Exit(1)
	}
}

type cloud struct {
	name    string // S3, GCS, Azure
	url     string // replica URL
	onDisk  string // the directory holding the replica's objects as files, if any
	summary string
	missing string // the emulator that is not installed, when a local directory stands in
	stop    func()
}

func run(dir, envFile string, watch int, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	env := map[string]string{}
	var clouds []cloud
	defer func() {
		for i := len(clouds) - 1; i >= 0; i-- {
			if clouds[i].stop != nil {
				clouds[i].stop()
			}
		}
	}()

	// S3: versitygw, or a directory.
	if gw, err := emulators.StartVersityGW(filepath.Join(dir, "versitygw")); err == nil {
		if err := gw.Bucket(ctx, bucket); err != nil {
			gw.Stop()
			return err
		}
		env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = gw.AccessKey, gw.SecretKey
		clouds = append(clouds, cloud{name: "S3",
			url:     gw.URL(bucket, prefix),
			onDisk:  filepath.Join(gw.Dir, bucket, prefix),
			summary: "versitygw (a real S3 gateway) on " + gw.Endpoint, stop: gw.Stop})
	} else if c, err := standIn(dir, "S3", err); err == nil {
		clouds = append(clouds, c)
	} else {
		return err
	}

	// GCS: fake-gcs-server, in-process.
	g, err := emulators.StartFakeGCS(nil)
	if err != nil {
		return fmt.Errorf("fake-gcs-server: %w", err)
	}
	g.Bucket(bucket)
	env["STORAGE_EMULATOR_HOST"] = g.Host
	clouds = append(clouds, cloud{name: "GCS", url: "gs://" + bucket + "/" + prefix,
		summary: "fake-gcs-server (in memory) on http://" + g.Host, stop: g.Stop})

	// Azure: Azurite, or a directory.
	if az, err := emulators.StartAzurite(filepath.Join(dir, "azurite")); err == nil {
		if err := az.Container(ctx, bucket); err != nil {
			az.Stop()
			return err
		}
		env["AZURE_STORAGE_CONNECTION_STRING"] = az.ConnectionString(az.Key)
		clouds = append(clouds, cloud{name: "Azure", url: az.URL(bucket, prefix),
			summary: "Azurite on " + az.Endpoint, stop: az.Stop})
	} else if c, err := standIn(dir, "Azure", err); err == nil {
		clouds = append(clouds, c)
	} else {
		return err
	}

	// The replica to break: one whose objects are files on this disk.
	broken := clouds[0]
	var b strings.Builder
	for k, v := range env {
		fmt.Fprintf(&b, "export %s=%s\n", k, shell.Quote(v))
	}
	for _, c := range clouds {
		fmt.Fprintf(&b, "CLOUD_%s=%s\n", strings.ToUpper(c.name), shell.Quote(c.url))
		fmt.Fprintf(out, "%-6s %-62s %s\n", c.name, c.url, c.summary)
	}
	if n := standInNotice(clouds); n != "" {
		fmt.Fprintln(out, n)
	}
	fmt.Fprintf(&b, "BROKEN=%s\nBROKEN_DIR=%s\n", shell.Quote(broken.url), shell.Quote(broken.onDisk))
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "DEMO_PORTS=%s\n", shell.Quote(strings.Trim(fmt.Sprint(ports), "[]")))
	if err := writeFileAtomic(envFile, []byte(b.String())); err != nil {
		return err
	}
	fmt.Fprintf(out, "ready; the demo breaks the %s replica, whose objects are files under %s\n", broken.name, broken.onDisk)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-sig:
			return nil
		case <-tick.C:
			if watch > 0 && syscall.Kill(watch, 0) != nil {
				return nil
			}
		}
	}
}

// standIn is a local directory playing a cloud whose emulator is not installed.
// standInNotice is the one line that says which emulators are missing and what that means for
// the demo's verify results; "" when none is.
func standInNotice(clouds []cloud) string {
	var missing []string
	for _, c := range clouds {
		if c.missing != "" {
			missing = append(missing, c.missing+" ("+c.name+")")
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "not installed: " + strings.Join(missing, ", ") + ": local directories stand in, and keep no checksums, so a quick verify of them says UNVERIFIED, not OK (make -f mk/emulators.mk emulators installs them)"
}

func standIn(dir, name string, why error) (cloud, error) {
	if !errors.Is(why, emulators.ErrNotInstalled) {
		return cloud{}, fmt.Errorf("%s emulator: %w", name, why)
	}
	d := filepath.Join(dir, strings.ToLower(name)+"-stand-in", prefix)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return cloud{}, err
	}
	return cloud{name: name, url: "file://" + d, onDisk: d, missing: emulatorOf[name],
		summary: "a local directory (stand-in)"}, nil
}

// freePorts are n distinct loopback ports free a moment ago, for the drill's candidates and its
// router's frontends (fixed ports could collide with another demo or service on the machine).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("a free port for the drill: %w", err)
		}
		defer ln.Close() // held until all n are picked, so that they are distinct
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// emulatorOf names the emulator a stand-in replaces.
var emulatorOf = map[string]string{"S3": "versitygw", "Azure": "Azurite"}

func writeFileAtomic(name string, data []byte) error {
	return providers.WriteFileAtomic(name, 0o600, func(w io.Writer) error { // the env file holds credentials
		_, err := w.Write(data)
		return err
	})
}
