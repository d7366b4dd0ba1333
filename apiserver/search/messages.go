// How parts of a query are named in the messages of refused searches.

package search

import (
	"strings"

	"github.com/yaacov/tree-search-language/v6/pkg/tsl"
)

func describe(n *tsl.TSLNode) string {
	if n == nil {
		return "nothing"
	}
	switch n.Type() {
	case tsl.KindIdentifier:
		s, _ := n.AsString()
		return "the field " + s
	case tsl.KindNullLiteral:
		return "null"
	case tsl.KindBinaryExpr, tsl.KindUnaryExpr:
		op, _ := n.AsExprOp()
		return "an expression using " + operatorName(op.Operator)
	case tsl.KindArrayLiteral:
		return "a list"
	}
	return "a " + strings.ToLower(n.Type().String()) + " value"
}

func operatorName(op tsl.Operator) string {
	switch op {
	case tsl.OpEQ:
		return "="
	case tsl.OpNE:
		return "!="
	case tsl.OpLT:
		return "<"
	case tsl.OpLE:
		return "<="
	case tsl.OpGT:
		return ">"
	case tsl.OpGE:
		return ">="
	case tsl.OpLike:
		return "like"
	case tsl.OpILike:
		return "ilike"
	case tsl.OpIn:
		return "in"
	case tsl.OpBetween:
		return "between"
	case tsl.OpIs:
		return "is"
	case tsl.OpREQ:
		return "~="
	case tsl.OpRNE:
		return "~!"
	case tsl.OpPlus:
		return "+"
	case tsl.OpMinus:
		return "-"
	case tsl.OpStar:
		return "*"
	case tsl.OpSlash:
		return "/"
	case tsl.OpPercent:
		return "%"
	case tsl.OpLen:
		return "len"
	case tsl.OpAny:
		return "any"
	case tsl.OpAll:
		return "all"
	case tsl.OpSum:
		return "sum"
	}
	return strings.ToLower(op.String())
}
