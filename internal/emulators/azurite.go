package emulators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The well-known Azurite development account (published in Azurite's README; not a secret).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite is a running Azurite blob service.
type Azurite struct {
	Endpoint string // http://127.0.0.1:PORT/devstoreaccount1
	Account  string
	Key      string
	proc     *Process
}

// AzuritePath is where `make emulators` installs azurite-blob.
func AzuritePath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".tools", "node_modules", ".bin", "azurite-blob"), nil
}

// StartAzurite starts azurite-blob on a free loopback port, keeping its data in dir.
func StartAzurite(dir string) (*Azurite, error) {
	bin, err := AzuritePath()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("azurite: %s: %w", bin, ErrNotInstalled)
	}
	return startWithRetry(context.Background(), func() (*Azurite, error) {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		args := []string{"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", dir,
			"--silent", "--skipApiVersionCheck", "--disableTelemetry"}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		// Node starts slowly on a busy 2-core machine; allow for it.
		p, err := startProcess("azurite", bin, args, nil, addr, 90*time.Second)
		if err != nil {
			return nil, err
		}
		return &Azurite{Endpoint: "http://" + addr + "/" + AzuriteAccount, Account: AzuriteAccount, Key: AzuriteKey, proc: p}, nil
	})
}

// ConnectionString is the connection string for the emulator with the given account key.
func (a *Azurite) ConnectionString(key string) string {
	return "DefaultEndpointsProtocol=http;AccountName=" + a.Account + ";AccountKey=" + key + ";BlobEndpoint=" + a.Endpoint + ";"
}

// Stop stops Azurite.
func (a *Azurite) Stop() { a.proc.Stop() }
