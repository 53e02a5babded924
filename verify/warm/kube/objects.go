package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"lifeboat/providers/localfile"
)

// maxDeployFileBytes bounds one deployment file read from the restored bundle.
const maxDeployFileBytes = 4 << 20

// bundleMount is where the init container restores the bundle, and manifestMount where it reads
// the manifest (from the owner ConfigMap).
const (
	bundleMount   = "/lifeboat/bundle"
	manifestMount = "/lifeboat/manifest"
	manifestKey   = "manifest.json"
)

// object is one document of the bundle's deployment files.
type object struct {
	file string // bundle-relative, for messages
	obj  *unstructured.Unstructured
}

func (o object) String() string {
	return fmt.Sprintf("%s %s (%s)", o.obj.GetKind(), o.obj.GetName(), o.file)
}

// readObjects reads every Kubernetes object of the deployment part: the .yaml, .yml and .json
// files under dir (other files, a Dockerfile, are not Kubernetes objects). A document without
// apiVersion and kind is an error naming its file and position.
func readObjects(dir string) ([]object, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if d.Type().IsRegular() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deployment files in %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []object
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Dir(dir), f)
		data, err := localfile.ReadFile(f, maxDeployFileBytes)
		if err != nil {
			return nil, fmt.Errorf("deployment file %s: %w", rel, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for i := 1; ; i++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("deployment file %s: document %d: %w", rel, i, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("deployment file %s: document %d: not a Kubernetes object (apiVersion, kind and metadata.name are required)", rel, i)
			}
			if u.IsList() {
				return nil, fmt.Errorf("deployment file %s: document %d: a %s; list the objects as documents of their own", rel, i, u.GetKind())
			}
			out = append(out, object{file: rel, obj: u})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the bundle's deployment part (%s) holds no Kubernetes object: a kubernetes launcher applies the bundle's own Deployment", dir)
	}
	return out, nil
}

// bootRef is what the launcher adds to every object of one boot.
type bootRef struct {
	run, region, namespace string
	digest                 string         // sha256:HEX of the manifest bytes in the owner ConfigMap
	owner                  map[string]any // the ownerReference to the boot's ConfigMap
}

func (b bootRef) labels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRun: b.run, LabelRegion: b.region}
}

func addLabels(u *unstructured.Unstructured, add map[string]string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range add {
		l[k] = v
	}
	u.SetLabels(l)
}

// prepare makes the object this boot applies: the launcher's namespace, labels and owner, and for
// a Deployment the restored bundle in place of its model and engine-config volumes.
func (l *Launcher) prepare(o object, b bootRef) (*unstructured.Unstructured, error) {
	u := o.obj.DeepCopy()
	if ns := u.GetNamespace(); ns != "" && ns != b.namespace {
		return nil, fmt.Errorf("%s: namespace %q is not the launcher's namespace %q (a boot applies into its own namespace only)", o, ns, b.namespace)
	}
	u.SetNamespace(b.namespace)
	unstructured.RemoveNestedField(u.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "ownerReferences", "generation"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	addLabels(u, b.labels())
	u.Object["metadata"].(map[string]any)["ownerReferences"] = []any{b.owner}
	if u.GetAPIVersion() == "apps/v1" && u.GetKind() == "Deployment" {
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", o, err)
		}
		if err := l.mountBundle(&d, o, b); err != nil {
			return nil, err
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o, err)
		}
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		if t, ok, _ := unstructured.NestedMap(m, "spec", "template", "metadata"); ok {
			delete(t, "creationTimestamp")
			_ = unstructured.SetNestedMap(m, t, "spec", "template", "metadata")
		}
		u.Object = m
	}
	return u, nil
}

// mountBundle rewrites a Deployment's pod so that it boots the restored bundle: an init container
// runs `lifeboat restore` from the region's replica into an emptyDir, checking every byte against
// the manifest (mounted from the boot's ConfigMap); the serving container's mounts of the model
// volume read its model/ directory, those of the engine-config volume its engine/ directory.
func (l *Launcher) mountBundle(d *appsv1.Deployment, o object, b bootRef) error {
	ps := &d.Spec.Template.Spec
	if d.Spec.Template.Labels == nil {
		d.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range b.labels() {
		d.Spec.Template.Labels[k] = v
	}
	var vols []corev1.Volume
	found := false
	for _, v := range ps.Volumes {
		switch v.Name {
		case l.cfg.ModelVolume:
			found = true
		case l.cfg.EngineVolume, BundleVolume, "lifeboat-manifest":
		default:
			vols = append(vols, v)
		}
	}
	if !found {
		return fmt.Errorf("%s: the pod has no volume %q to hold the model: name the model's volume with the launcher's model_volume", o, l.cfg.ModelVolume)
	}
	vols = append(vols,
		corev1.Volume{Name: BundleVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "lifeboat-manifest", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ownerName(b.run)},
			Items:                []corev1.KeyToPath{{Key: manifestKey, Path: manifestKey}},
		}}})
	ps.Volumes = vols
	remap := func(c *corev1.Container) (model bool) {
		for j := range c.VolumeMounts {
			vm := &c.VolumeMounts[j]
			switch vm.Name {
			case l.cfg.ModelVolume:
				vm.Name, vm.SubPath = BundleVolume, path.Join("model", vm.SubPath)
				model = true
			case l.cfg.EngineVolume:
				vm.Name, vm.SubPath = BundleVolume, path.Join("engine", vm.SubPath)
			}
		}
		return model
	}
	serving := -1
	for i := range ps.Containers {
		if remap(&ps.Containers[i]) {
			serving = i
		}
	}
	// Init containers: one the fleet's replace_init_containers names is replaced by the restore
	// below; the others read the restored bundle where they mounted the model (checkObjects
	// refused any that would write it).
	inits := make([]corev1.Container, 0, len(ps.InitContainers))
	for _, c := range ps.InitContainers {
		if slices.Contains(l.cfg.ReplaceInitContainers, c.Name) {
			continue
		}
		remap(&c)
		inits = append(inits, c)
	}
	ps.InitContainers = inits
	if serving < 0 {
		return fmt.Errorf("%s: no container mounts the volume %q: which one serves the model?", o, l.cfg.ModelVolume)
	}
	for _, kv := range l.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		ps.Containers[serving].Env = append(ps.Containers[serving].Env, corev1.EnvVar{Name: k, Value: v})
	}
	init := corev1.Container{
		Name:  InitContainer,
		Image: l.cfg.Image,
		// The digest pins the manifest this host verified: a ConfigMap swapped between apply and
		// restore (anyone with patch on ConfigMaps in the namespace) is refused by the restore.
		Args: []string{"restore", "--manifest", manifestMount + "/" + manifestKey, "--manifest-digest", b.digest,
			"--from", l.cfg.Replica, "--to", bundleMount},
		VolumeMounts: []corev1.VolumeMount{
			{Name: BundleVolume, MountPath: bundleMount},
			{Name: "lifeboat-manifest", MountPath: manifestMount, ReadOnly: true},
		},
	}
	if l.cfg.RestoreSecret != "" {
		init.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: l.cfg.RestoreSecret}}}}
	}
	ps.InitContainers = append([]corev1.Container{init}, ps.InitContainers...)
	return nil
}

// servingPort is the container port a port-forward reaches in the bundle's Deployment.
func servingPort(objs []*unstructured.Unstructured, cfg Config) int {
	if cfg.Port != 0 {
		return cfg.Port
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d) != nil {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			serves := false
			for _, vm := range c.VolumeMounts {
				serves = serves || (vm.Name == BundleVolume && strings.HasPrefix(vm.SubPath, "model"))
			}
			if !serves {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == "http" {
					return int(p.ContainerPort)
				}
			}
			if len(c.Ports) > 0 {
				return int(c.Ports[0].ContainerPort)
			}
			return vllmPort(c)
		}
	}
	return vllmDefaultPort
}
