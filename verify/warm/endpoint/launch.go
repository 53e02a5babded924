package endpoint

import (
	"context"

	"lifeboat/fleet/launch"
	"lifeboat/verify/warm"
)

// Launcher "launches" an already-running replica at URL: nothing is started or stopped.
type Launcher struct {
	URL string // base URL, e.g. http://10.0.0.7:8000 (a trailing /v1 is tolerated)
}

// Launch validates the URL and returns it as an Instance.
func (l *Launcher) Launch(_ context.Context, _ launch.Spec) (launch.Instance, error) {
	u, err := warm.NormalizeBaseURL(l.URL)
	if err != nil {
		return nil, err
	}
	return endpointInstance(u), nil
}

type endpointInstance string

func (e endpointInstance) BaseURL() string            { return string(e) }
func (e endpointInstance) Exited() <-chan struct{}    { return nil }
func (e endpointInstance) ExitErr() error             { return nil }
func (e endpointInstance) LogTail(int) string         { return "" }
func (e endpointInstance) Stop(context.Context) error { return nil }
