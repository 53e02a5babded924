package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"lifeboat/internal/emulators/route53fake"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	zone := flag.String("zone", "", "a hosted zone id to create (empty: only the seed's)")
	seed := flag.String("seed", "", "a JSON seed file of zones and record sets")
	pending := flag.Int("pending-polls", 1, "GetChange polls of each change that answer PENDING before INSYNC")
	flag.Parse()
	s := route53fake.New()
	s.PendingPolls = *pending
	if *zone != "" {
		s.AddZone(*zone)
	}
	if *seed != "" {
		if err := s.LoadFile(*seed); err != nil {
			fail(err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: s}
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		<-c
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "route53-fake:", err)
	os.Exit(1)
}
