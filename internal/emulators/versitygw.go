package emulators

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// S3 is a running versitygw (posix backend) S3 gateway.
type S3 struct {
	Endpoint  string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string // random per start
	Dir       string // the posix root: each bucket is a sub-directory
	proc      *Process
}

// VersityGWPath is where `make emulators` installs versitygw.
func VersityGWPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "versitygw"), nil
}

// StartVersityGW starts versitygw on a free loopback port with its posix root in dir (created if
// needed). If dir's filesystem lacks user xattrs, metadata goes to a sidecar directory beside it.
func StartVersityGW(dir string) (*S3, error) {
	bin, err := VersityGWPath()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("versitygw: %s: %w", bin, ErrNotInstalled)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	s := &S3{Region: "us-east-1", AccessKey: "lifeboattest", SecretKey: hex.EncodeToString(secret[:]), Dir: data}
	return startWithRetry(context.Background(), func() (*S3, error) {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{"--port", addr, "--quiet", "--region", s.Region, "posix"}
		if !supportsXattr(data) {
			side := filepath.Join(dir, "sidecar")
			if err := os.MkdirAll(side, 0o755); err != nil {
				return nil, err
			}
			args = append(args, "--sidecar", side)
		}
		args = append(args, data)
		env := []string{"ROOT_ACCESS_KEY=" + s.AccessKey, "ROOT_SECRET_KEY=" + s.SecretKey}
		p, err := startProcess("versitygw", bin, args, env, addr, 60*time.Second)
		if err != nil {
			return nil, err
		}
		c := *s
		c.Endpoint, c.proc = "http://"+addr, p
		return &c, nil
	})
}

// Stop stops the gateway.
func (s *S3) Stop() { s.proc.Stop() }
