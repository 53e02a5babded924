package manifest

import (
	"context"
	"fmt"
	"strings"

	"lifeboat/manifest/modelrepo"
	"lifeboat/providers/localfile"
)

// SecretsError refuses a build whose deployment files hold secret values: a deployment file is
// embedded in the manifest and copied into every replica store and the Kubernetes launcher's
// ConfigMap, so a token in it would travel everywhere the manifest goes. It names each file,
// line and field, never the value.
type SecretsError struct {
	Files []SecretFile
}

// SecretFile is one deployment file and the secret values found in it.
type SecretFile struct {
	Path     string // the file as given (local path)
	Bundle   string // its path in the bundle, deploy/…
	Findings []modelrepo.SecretFinding
}

func (e *SecretsError) Error() string {
	var b strings.Builder
	n := 0
	for _, f := range e.Files {
		n += len(f.Findings)
	}
	fmt.Fprintf(&b, "build: refused: %d secret value(s) in deployment files would be copied into the manifest, every replica store and the launcher's ConfigMap:", n)
	for _, f := range e.Files {
		for _, s := range f.Findings {
			fmt.Fprintf(&b, "\n  %s:%d: %s", f.Path, s.Line, s.Describe())
		}
	}
	b.WriteString("\nkeep secrets out of --deploy: create them in each cluster (kubectl create secret …) and reference them (env valueFrom.secretKeyRef, envFrom.secretRef); the values were not printed")
	return b.String()
}

// checkDeploySecrets reads every deployment file and refuses the build when one holds a secret
// value (modelrepo.FindSecrets). Files too large to parse whole are scanned line by line.
func checkDeploySecrets(ctx context.Context, srcs []source) error {
	var bad []SecretFile
	for _, s := range srcs {
		if s.part != PartDeployment || s.store != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var found []modelrepo.SecretFinding
		if s.size <= modelrepo.MaxDeployFileBytes {
			data, err := localfile.ReadFile(s.abs, modelrepo.MaxDeployFileBytes)
			if err != nil {
				return fmt.Errorf("build: deployment file: %w", err)
			}
			found = modelrepo.FindSecrets(data)
		} else {
			fh, _, err := localfile.Open(s.abs)
			if err != nil {
				return fmt.Errorf("build: deployment file: %w", err)
			}
			found, err = modelrepo.ScanSecretLines(fh)
			fh.Close()
			if err != nil {
				return fmt.Errorf("build: deployment file %s: %w", s.abs, err)
			}
		}
		if len(found) > 0 {
			bad = append(bad, SecretFile{Path: s.abs, Bundle: s.bundle, Findings: found})
		}
	}
	if len(bad) > 0 {
		return &SecretsError{Files: bad}
	}
	return nil
}

// checkEmbeddedSecrets checks again the deployment bytes that were embedded: what goes into the
// manifest, should a file have changed after checkDeploySecrets read it.
func checkEmbeddedSecrets(srcs []source, files []File) error {
	var bad []SecretFile
	for i, f := range files {
		if f.Part != PartDeployment || f.Data == nil {
			continue
		}
		if found := modelrepo.FindSecrets(f.Data); len(found) > 0 {
			bad = append(bad, SecretFile{Path: srcs[i].abs, Bundle: f.Path, Findings: found})
		}
	}
	if len(bad) > 0 {
		return &SecretsError{Files: bad}
	}
	return nil
}
