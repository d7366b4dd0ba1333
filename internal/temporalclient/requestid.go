package temporalclient

import (
	"context"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

type signalRequestIDKey struct{}

// WithSignalRequestID makes a SignalWorkflow made with ctx, through a
// client of this package, carry id as its request id instead of the
// random one the SDK draws. Temporal records a signal whose request id the
// run has already recorded only once, so senders that name the same event
// the same way (every worker that saw an object change) send it once
// between them.
func WithSignalRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, signalRequestIDKey{}, id)
}

// SignalRequestID is the request id WithSignalRequestID put in ctx, or "".
func SignalRequestID(ctx context.Context) string {
	id, _ := ctx.Value(signalRequestIDKey{}).(string)
	return id
}

// setSignalRequestID sets the request id of a signal from its context;
// every other call passes through unchanged. The SDK offers no option for
// it.
func setSignalRequestID(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if id := SignalRequestID(ctx); id != "" {
		if r, ok := req.(*workflowservice.SignalWorkflowExecutionRequest); ok {
			r.RequestId = id
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
