package aggregation

import "github.com/hyperfleet/hyperfleet/resource"

// Reason and message of a resource whose change waits for admission.
const (
	ReasonAwaitingAdmission  = "AwaitingAdmission"
	MessageAwaitingAdmission = "The change waits in the outbox: admission control hands it to the workflow engine as rounds in flight start, so Temporal is never given more than it keeps up with"
)

// AwaitingAdmission says, in the Ready and Reconciled conditions that are
// not True, that the resource's change has not been handed to the
// workflow engine yet; every other condition is left as it is. It returns
// a new slice: the stored conditions are not touched.
func AwaitingAdmission(conds []resource.Condition) []resource.Condition {
	out := make([]resource.Condition, len(conds))
	copy(out, conds)
	for i := range out {
		c := &out[i]
		if (c.Type == resource.ConditionReady || c.Type == resource.ConditionReconciled) && c.Status != resource.StatusTrue {
			c.Reason, c.Message = ReasonAwaitingAdmission, MessageAwaitingAdmission
		}
	}
	return out
}
