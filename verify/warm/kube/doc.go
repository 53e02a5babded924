// Package kube is the Kubernetes launcher: it boots a candidate replica by applying the bundle's own
// deployment manifests to a namespace, with the model restored into the pod by an init container,
// and removes everything it created when it stops (or the next run does, by label, after a crash).
//
// The init container runs `lifeboat restore` from the region's replica, so the pod serves the model
// the DR manifest proves. The launcher waits for the rollout while naming what Kubernetes says
// (Unschedulable, ImagePullBackOff, CrashLoopBackOff, OOMKilled, readiness failing: verdicts.go),
// and lets the warm prober reach the replica at a URL the fleet gives or through a port-forward
// (forward.go). fleet.go decodes its fleet section, objects.go reads and labels the bundle's
// objects, mapper.go finds their API resources, launch.go runs a boot, and leftovers.go removes
// what a crashed run left.
//
// It talks to the API server through the dynamic client and REST (no typed clientset, so the
// binary does not register every API group at start-up).
package kube
