package lint

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
)

// Checks of the deployment files: Kubernetes YAML and Dockerfiles.

func checkDeployMissing(c *Context) {
	if len(c.Manifest.PartFiles(manifest.PartDeployment)) == 0 {
		c.Warnf("deploy/", "", "the manifest has no deployment files (built without --deploy): the serving image, mounts and resources of a replica are not captured")
	}
}

func checkDeployYAML(c *Context) {
	for _, d := range c.deployFiles() {
		p := d.file.Path
		switch {
		case d.readErr != nil:
			why := ""
			if d.file.Data == nil && d.file.Size > manifest.DefaultEmbedLimit {
				why = fmt.Sprintf(" (%d bytes: too large to be embedded in the manifest, and not available from the linted directories)", d.file.Size)
			}
			c.Warnf(p, "lint the bundle directory (--bundle) so the file can be read", "%s was not checked%s: %v", p, why, d.readErr)
		case errors.Is(d.err, errTemplate):
			c.Warnf(p, "lint the rendered manifests (helm template …) instead of the template", "%s looks like a template ({{ … }}) and is not plain YAML, so it was not checked", p)
		case d.err != nil && d.yaml:
			c.Errorf(p, "", "%v", d.err)
		case d.err != nil:
			c.Errorf(p, "fix the Dockerfile (docker build reports the same error)", "%v", d.err)
		}
	}
}

func describeContainer(kind, name, ctKind, ctName string) string {
	s := kind
	if name != "" {
		s += " " + name
	}
	if ctName == "" {
		ctName = "(unnamed)"
	}
	return fmt.Sprintf("%s %s %s", s, strings.ToLower(ctKind[:1])+ctKind[1:], ctName)
}

func checkDeployImages(c *Context) {
	for _, d := range c.deployFiles() {
		if d.err != nil || d.readErr != nil {
			continue
		}
		p := d.file.Path
		for _, o := range d.objs {
			for _, ct := range o.Containers() {
				if ct.Image == "" || modelrepo.ImagePinned(ct.Image) {
					continue
				}
				c.Warnf(p, "", "%s: %s: image %s is referenced by tag, not by digest: a replica may run a different build", at(p, ct.ImageLine), describeContainer(o.Kind, o.Name, ct.Kind, ct.Name), ct.Image)
			}
		}
		for _, f := range d.froms {
			switch {
			case f.Scratch || f.StageRef:
			case f.Variable:
				c.Warnf(p, "pin the default of the build argument by digest, and pass only digests with --build-arg", "%s: FROM %s: the base image comes from a build argument, so whether it is pinned cannot be checked (unpinned-unknown)", at(p, f.Line), f.Image)
			case !modelrepo.ImagePinned(f.Image):
				c.Warnf(p, "", "%s: FROM %s is referenced by tag, not by digest: a rebuilt image may have a different base", at(p, f.Line), f.Image)
			}
		}
	}
}

func checkDeployModelMount(c *Context) {
	cfg, _ := c.engineCfg()
	engineModel := ""
	if cfg != nil {
		engineModel = cfg.Model
	}
	for _, vc := range c.vllmContainers() {
		model := vc.inv.Model
		source := "positional model argument"
		if vc.cfg != nil {
			if k, ok := vc.cfg.Key("model"); ok {
				switch {
				case k.File != vc.file:
					source = "engine config model"
				case k.Key == "model (positional)":
					source = "positional model argument"
				default:
					source = k.Key + ", " + k.At()
				}
			}
		}
		if model == "" {
			model, source = engineModel, "engine config model"
		}
		if model == "" || !path.IsAbs(model) {
			continue
		}
		model = path.Clean(model)
		var mounts []string
		ok := false
		for _, m := range vc.c.VolumeMounts {
			mp := path.Clean(m.MountPath)
			if m.MountPath == "" {
				continue
			}
			mounts = append(mounts, mp)
			if _, under := underMount(mp, model); under {
				ok = true
				break
			}
		}
		if ok {
			continue
		}
		list := "none"
		if len(mounts) > 0 {
			list = strings.Join(mounts, ", ")
		}
		c.Errorf(vc.file, "", "%s: %s runs vLLM with model %s (%s) but mounts no volume at that path or a parent of it (mounts: %s): the replica has no model to load", at(vc.file, vc.c.Line), describeContainer(vc.obj.Kind, vc.obj.Name, vc.c.Kind, vc.c.Name), model, source, list)
	}
}
