package gatewayapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/providers"
)

// notAGuess ends every refusal of a pool: without the object, its selector and its endpoint
// picker, where the region's traffic would go is not known.
const notAGuess = "refused: where the region's traffic goes would be a guess, not a reading"

// checkPools reads, for every region of the managed classes whose backend is an InferencePool
// or an InferencePoolImport, that object (and a pool's endpoint picker Service), refusing a
// region whose pool is missing, unreadable, selects nothing or has no endpoint picker it can
// see. It returns what it found as note lines, by region.
func (g *Router) checkPools(ctx context.Context) ([]string, error) {
	regions := map[string]bool{}
	for class := range g.cfg.Routes {
		for _, r := range g.cfg.Classes[class] {
			regions[r] = true
		}
	}
	var notes []string
	for _, r := range slices.Sorted(maps.Keys(regions)) {
		b, ok := g.cfg.Services[r]
		if !ok {
			continue
		}
		var n []string
		var err error
		switch b.kind() {
		case KindInferencePool:
			n, err = g.checkPool(ctx, r, b)
		case KindInferencePoolImport:
			n, err = g.checkImport(ctx, r, b)
		}
		if err != nil {
			return nil, err
		}
		notes = append(notes, n...)
	}
	return notes, nil
}

func (g *Router) ns(b Backend) string {
	if b.Namespace != "" {
		return b.Namespace
	}
	return g.namespace
}

// objErr is a failed get of what a region's backend needs (at names it): unreachable when the
// API server did not answer, else a refusal naming what the driver could not read and why.
func objErr(ctx context.Context, at string, gvr schema.GroupVersionResource, err error) error {
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	switch {
	case kubeclient.Canceled(ctx, err):
		return fmt.Errorf("%s: %w", at, context.Canceled)
	case apierrors.IsNotFound(err) && gvr.Group == "":
		return fmt.Errorf("%s: not found (is it created, in that namespace?); %s", at, notAGuess)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: not found (is it created, in that namespace, and is the %s CRD installed?); %s", at, res, notAGuess)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: cannot be read: %s (the driver needs get on %s); %s", at, kubeclient.Message(err), res, notAGuess)
	case !kubeclient.Answered(err):
		return fmt.Errorf("%s: %s: %w", at, kubeclient.Message(err), router.ErrRouterUnreachable)
	}
	return fmt.Errorf("%s: %s; %s", at, kubeclient.Message(err), notAGuess)
}

// checkPool reads region's InferencePool: it must exist, select pods (spec.selector.matchLabels)
// and name an endpoint picker (spec.endpointPickerRef), a Service the driver can read that has
// the port the reference names.
func (g *Router) checkPool(ctx context.Context, region string, b Backend) ([]string, error) {
	ns := g.ns(b)
	at := fmt.Sprintf("gateway-api: region %s: inferencepool %s/%s", region, ns, b.Name)
	obj, err := g.dyn.Resource(InferencePools).Namespace(ns).Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return nil, objErr(ctx, at, InferencePools, err)
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s; %s", at, fmt.Sprintf(format, args...), notAGuess)
	}
	sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		return nil, refuse("no spec.selector (matchLabels): the pool selects no model server pods")
	}
	epp, found, _ := unstructured.NestedMap(obj.Object, "spec", "endpointPickerRef")
	eppName, _ := epp["name"].(string)
	if !found || eppName == "" {
		return nil, refuse("no spec.endpointPickerRef: no endpoint picker is named to choose among the pool's pods")
	}
	kind, _ := epp["kind"].(string)
	group, _ := epp["group"].(string)
	if kind == "" {
		kind = KindService
	}
	if kind != KindService || group != "" {
		return nil, refuse("its endpoint picker is a %s (group %q) %s: Lifeboat can check only a Service endpoint picker", providers.Sanitize(kind, 63), providers.Sanitize(group, 63), providers.Sanitize(eppName, 253))
	}
	var port int64
	if pm, ok := epp["port"].(map[string]any); ok {
		port, _ = number(pm["number"])
	}
	eppAt := fmt.Sprintf("%s: its endpoint picker, Service %s/%s", at, ns, providers.Sanitize(eppName, 253))
	svc, err := g.dyn.Resource(services).Namespace(ns).Get(ctx, eppName, metav1.GetOptions{})
	if err != nil {
		return nil, objErr(ctx, eppAt, services, err)
	}
	if port != 0 {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		has := false
		for _, p := range ports {
			pm, _ := p.(map[string]any)
			if n, _ := number(pm["port"]); n == port {
				has = true
			}
		}
		if !has {
			return nil, fmt.Errorf("%s: has no port %d (spec.endpointPickerRef.port); %s", eppAt, port, notAGuess)
		}
	}
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		labels = append(labels, k+"="+sel[k])
	}
	picker := eppName
	if port != 0 {
		picker += ":" + strconv.FormatInt(port, 10)
	}
	if fm, _ := epp["failureMode"].(string); fm != "" {
		picker += " (failureMode " + fm + ")"
	}
	name := fmt.Sprintf("region %s: inferencepool %s/%s", region, ns, b.Name)
	out := []string{providers.Sanitize(fmt.Sprintf("%s: selector %s; endpoint picker Service %s", name, strings.Join(labels, ","), picker), 400)}
	parents, _, _ := unstructured.NestedSlice(obj.Object, "status", "parents")
	if len(parents) == 0 {
		out = append(out, name+": no gateway controller has reported on it (status.parents is empty)")
	}
	var lines []string
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		ctl, _ := pm["controllerName"].(string)
		conds, _ := pm["conditions"].([]any)
		lines = append(lines, providers.Sanitize(fmt.Sprintf("%s: gateway %s (%s): %s", name, parentName(pm), ctl, allConditions(conds, obj.GetGeneration())), 400))
	}
	slices.Sort(lines)
	return append(out, lines...), nil
}

// checkImport reads region's InferencePoolImport: it must exist; its controllers' conditions
// (and their parents') and the clusters exporting the pool are reported.
func (g *Router) checkImport(ctx context.Context, region string, b Backend) ([]string, error) {
	ns := g.ns(b)
	at := fmt.Sprintf("gateway-api: region %s: inferencepoolimport %s/%s", region, ns, b.Name)
	obj, err := g.dyn.Resource(InferencePoolImports).Namespace(ns).Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return nil, objErr(ctx, at, InferencePoolImports, err)
	}
	name := fmt.Sprintf("region %s: inferencepoolimport %s/%s", region, ns, b.Name)
	ctls, _, _ := unstructured.NestedSlice(obj.Object, "status", "controllers")
	if len(ctls) == 0 {
		return []string{name + ": no controller has reported on it (status.controllers is empty): the pool's import is not known to be in effect"}, nil
	}
	gen := obj.GetGeneration()
	var out []string
	for _, c := range ctls {
		cm, _ := c.(map[string]any)
		ctl, _ := cm["name"].(string)
		conds, _ := cm["conditions"].([]any)
		var clusters []string
		ecs, _ := cm["exportingClusters"].([]any)
		for _, e := range ecs {
			em, _ := e.(map[string]any)
			if n, _ := em["name"].(string); n != "" {
				clusters = append(clusters, n)
			}
		}
		exp := "no exporting cluster"
		if len(clusters) > 0 {
			exp = "exported by " + strings.Join(clusters, ", ")
		}
		out = append(out, providers.Sanitize(fmt.Sprintf("%s: controller %s: %s; %s", name, ctl, allConditions(conds, gen), exp), 400))
		parents, _ := cm["parents"].([]any)
		for _, p := range parents {
			pm, _ := p.(map[string]any)
			pconds, _ := pm["conditions"].([]any)
			pctl, _ := pm["controllerName"].(string)
			out = append(out, providers.Sanitize(fmt.Sprintf("%s: controller %s: gateway %s (%s): %s", name, ctl, parentName(pm), pctl, allConditions(pconds, gen)), 400))
		}
	}
	slices.Sort(out)
	return out, nil
}
