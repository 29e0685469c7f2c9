// Command natsserver runs one nats-server, with JetStream on file storage,
// as a process of its own, so that a test can kill it (SIGKILL) and start it
// again on the same port and store: the faults an embedded server cannot
// have.
//
// It prints one line, "ready <client-url>", on standard output once the
// server accepts connections, and logs nothing else unless -log is given.
// SIGTERM or SIGINT shut the server down gracefully; with -stdin, so does
// the end of standard input (the parent test died, for example). A fatal
// server error (a port already in use, say) is printed on standard error as
// "fatal: ..." and the program exits with status 1.
//
//	natsserver -port 4222 -store /tmp/js
//	natsserver -port 4222 -store /tmp/js1 -name n1 -cluster-name c \
//		-cluster-port 6222 -routes nats-route://127.0.0.1:6222,nats-route://127.0.0.1:6223
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	var (
		host        = flag.String("host", "127.0.0.1", "the address to listen on, for clients and routes")
		port        = flag.Int("port", server.DEFAULT_PORT, "the client port; -1 for a random one")
		store       = flag.String("store", "", "the JetStream store directory (file storage); required")
		name        = flag.String("name", "", "the server name; required, distinct, in a cluster")
		clusterPort = flag.Int("cluster-port", 0, "the route port; 0 for no cluster")
		clusterName = flag.String("cluster-name", "natsbridge", "the cluster's name")
		routes      = flag.String("routes", "", "comma-separated nats-route:// URLs of the cluster's nodes (this one included)")
		maxMem      = flag.Int64("max-mem", 64<<20, "JetStream's memory bound, in bytes")
		maxStore    = flag.Int64("max-store", 512<<20, "JetStream's file store bound, in bytes")
		logs        = flag.Bool("log", false, "log what the server logs on standard error")
		stdin       = flag.Bool("stdin", false, "shut down when standard input ends")
		wait        = flag.Duration("ready-timeout", 30*time.Second, "how long to wait for the server to be ready")
	)
	flag.Parse()
	if *store == "" {
		fail("-store is required")
	}

	opts := &server.Options{
		Host:               *host,
		Port:               *port,
		ServerName:         *name,
		NoSigs:             true, // handled below, so that SIGTERM is graceful and quiet
		NoLog:              !*logs,
		JetStream:          true,
		StoreDir:           *store,
		JetStreamMaxMemory: *maxMem,
		JetStreamMaxStore:  *maxStore,
	}
	if *clusterPort != 0 {
		opts.Cluster = server.ClusterOpts{Name: *clusterName, Host: *host, Port: *clusterPort}
		if *routes != "" {
			opts.Routes = server.RoutesFromStr(*routes)
		}
	}

	s, err := server.NewServer(opts)
	if err != nil {
		fail(err.Error())
	}
	if *logs {
		s.ConfigureLogger()
	} else {
		s.SetLogger(fatalLogger{}, false, false)
	}

	go s.Start()
	if !s.ReadyForConnections(*wait) {
		s.Shutdown()
		fail(fmt.Sprintf("not ready for connections in %v", *wait))
	}
	fmt.Printf("ready %s\n", s.ClientURL())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if *stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	s.Shutdown()
	s.WaitForShutdown()
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "fatal:", strings.TrimSpace(msg))
	os.Exit(1)
}

// fatalLogger drops everything but the fatal errors, after which the
// server would not work: like nats-server's own logger, it exits.
type fatalLogger struct{}

func (fatalLogger) Fatalf(format string, v ...any) { fail(fmt.Sprintf(format, v...)) }
func (fatalLogger) Noticef(string, ...any)         {}
func (fatalLogger) Warnf(string, ...any)           {}
func (fatalLogger) Errorf(string, ...any)          {}
func (fatalLogger) Debugf(string, ...any)          {}
func (fatalLogger) Tracef(string, ...any)          {}
