package compare

import "slices"

// topicValue is the payload of topicBus's topic 10·h + l, where H and L are
// the h-th and l-th digit types: a hundred distinct Go types, so a hundred
// distinct topics, each with Value's fields.
type topicValue[H, L any] Value

type (
	d0 struct{}
	d1 struct{}
	d2 struct{}
	d3 struct{}
	d4 struct{}
	d5 struct{}
	d6 struct{}
	d7 struct{}
	d8 struct{}
	d9 struct{}
)

// typed holds topicBus's topics, indexed by topic number.
var typed = slices.Concat(
	typedRow[d0](), typedRow[d1](), typedRow[d2](), typedRow[d3](), typedRow[d4](),
	typedRow[d5](), typedRow[d6](), typedRow[d7](), typedRow[d8](), typedRow[d9](),
)

func typedRow[H any]() []topicType {
	return []topicType{
		newTopicType[topicValue[H, d0]](), newTopicType[topicValue[H, d1]](),
		newTopicType[topicValue[H, d2]](), newTopicType[topicValue[H, d3]](),
		newTopicType[topicValue[H, d4]](), newTopicType[topicValue[H, d5]](),
		newTopicType[topicValue[H, d6]](), newTopicType[topicValue[H, d7]](),
		newTopicType[topicValue[H, d8]](), newTopicType[topicValue[H, d9]](),
	}
}
