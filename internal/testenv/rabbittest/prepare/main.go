// Command prepare makes sure the RabbitMQ the event tests run against is
// installed (Debian's rabbitmq-server, with apt-get when missing and root;
// internal/testenv/rabbittest). make test runs it before go test so that a
// machine without the broker fails at once with the reason.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/waldur/waldur-gitops/internal/testenv/rabbittest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := rabbittest.Install(ctx, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "rabbittest: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "rabbittest: rabbitmq-server is installed")
}
