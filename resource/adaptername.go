package resource

import (
	"fmt"
	"unicode"
)

// MaxAdapterNameLength bounds an adapter's name: what a status report may
// carry, and the suffix of the adapter's task queue.
const MaxAdapterNameLength = 253

// CheckAdapterName says why a name cannot be an adapter's (nil when it
// can): 1 to MaxAdapterNameLength printable characters without spaces,
// the rule a status report's adapter is held to.
func CheckAdapterName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an adapter name is empty")
	case len(name) > MaxAdapterNameLength:
		return fmt.Errorf("adapter name %.40q... is %d characters, more than %d", name, len(name), MaxAdapterNameLength)
	}
	for _, r := range name {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return fmt.Errorf("adapter name %q holds a space or a character that is not printable", name)
		}
	}
	return nil
}
