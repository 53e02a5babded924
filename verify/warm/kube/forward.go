package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"lifeboat/verify/warm"
)

// forward is one port-forward through the API server to a pod.
type forward struct {
	pod  string
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func (f *forward) close() {
	f.once.Do(func() { close(f.stop) })
	<-f.done
}

// ensureForward keeps a port-forward from the instance's local port to the serving container of a
// Ready pod: started when one is Ready, started again (on another Ready pod) when it ended.
func (in *instance) ensureForward(ctx context.Context) {
	in.mu.Lock()
	cur := in.pf
	in.mu.Unlock()
	if cur != nil {
		select {
		case <-cur.done:
		default:
			return // still forwarding
		}
	}
	pods, err := in.pods(ctx)
	if err != nil {
		return
	}
	for _, p := range pods {
		if !podReady(p) {
			continue
		}
		f, err := in.l.portForward(in.ns, p.Name, in.localPort, in.port)
		if err != nil {
			in.l.cfg.Log.Warn("port-forward", "pod", p.Name, "err", err)
			in.mu.Lock()
			in.fwdErr = fmt.Errorf("pod %s port %d: %w", p.Name, in.port, err)
			in.fwdFails++
			in.mu.Unlock()
			return
		}
		in.mu.Lock()
		if in.stopped {
			in.mu.Unlock()
			f.close()
			return
		}
		in.pf = f
		in.fwdErr, in.fwdFails = nil, 0
		in.mu.Unlock()
		in.l.cfg.Log.Info("port-forward", "pod", p.Name, "local", in.localPort, "port", in.port)
		return
	}
}

// portForward forwards 127.0.0.1:local to the pod's port through the API server (websocket, with
// SPDY as the fallback, as kubectl does). It returns once the local port listens.
func (l *Launcher) portForward(ns, pod string, local, remote int) (*forward, error) {
	u, err := url.Parse(strings.TrimRight(l.rc.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "/portforward")
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(l.rc)
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, l.rc); err == nil {
		dialer = portforward.NewFallbackDialerForStreaming(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	f := &forward{pod: pod, stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, remote)}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	errc := make(chan error, 1)
	go func() {
		defer close(f.done)
		errc <- pf.ForwardPorts()
	}()
	select {
	case <-ready:
		return f, nil
	case err := <-errc:
		if err == nil {
			err = fmt.Errorf("port-forward to pod %s ended", pod)
		}
		return nil, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	}
}

// forwardFailure is the verdict of a port-forward that cannot open (nil when the last one
// opened, or none was tried): the pod is Ready, so this is not a replica still loading.
func (in *instance) forwardFailure() *warm.LaunchFailure {
	in.mu.Lock()
	err, n := in.fwdErr, in.fwdFails
	in.mu.Unlock()
	if err == nil {
		return nil
	}
	return &warm.LaunchFailure{Verdict: warm.PortForward, Reason: fmt.Sprintf(
		"the port-forward through the API server (pods/portforward in namespace %s) cannot open (%d attempt(s)): %s; the launcher's identity needs get and create on pods/portforward, or give the launcher a url where the replica is reachable",
		in.ns, n, sanitize(err.Error()))}
}
