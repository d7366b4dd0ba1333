package temporalclient

import (
	"context"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

func TestSignalRequestIDFromTheContext(t *testing.T) {
	cases := []struct {
		name string
		ctx  context.Context
		req  any
		want string // the signal's request id once through; "" for other calls
	}{
		{"a signal with an id in its context", WithSignalRequestID(context.Background(), "wake-1"),
			&workflowservice.SignalWorkflowExecutionRequest{RequestId: "random"}, "wake-1"},
		{"a signal without one keeps the SDK's", context.Background(),
			&workflowservice.SignalWorkflowExecutionRequest{RequestId: "random"}, "random"},
		{"an empty id keeps the SDK's", WithSignalRequestID(context.Background(), ""),
			&workflowservice.SignalWorkflowExecutionRequest{RequestId: "random"}, "random"},
		{"another call is left alone", WithSignalRequestID(context.Background(), "wake-1"),
			&workflowservice.SignalWithStartWorkflowExecutionRequest{RequestId: "random"}, "random"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			invoked := false
			invoker := func(_ context.Context, _ string, req, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				invoked = true
				return nil
			}
			if err := setSignalRequestID(c.ctx, "/m", c.req, nil, nil, invoker); err != nil {
				t.Fatal(err)
			}
			if !invoked {
				t.Fatal("the call was not passed on")
			}
			var got string
			switch r := c.req.(type) {
			case *workflowservice.SignalWorkflowExecutionRequest:
				got = r.RequestId
			case *workflowservice.SignalWithStartWorkflowExecutionRequest:
				got = r.RequestId
			}
			if got != c.want {
				t.Fatalf("request id = %q, want %q", got, c.want)
			}
		})
	}
}
