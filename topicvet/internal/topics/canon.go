package topics

import "go/types"

// emptyInterface is the empty interface as the alias any, which prints
// as any (the interface itself prints as interface{}).
var emptyInterface = types.Universe.Lookup("any").Type()

// canon returns a type identical to t that prints one way whatever the
// source spelled: no alias at any depth, byte and rune as uint8 and int32,
// and the empty interface as any. Two identical types have one key.
func canon(t types.Type) types.Type {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		return types.Typ[t.Kind()]
	case *types.Pointer:
		return types.NewPointer(canon(t.Elem()))
	case *types.Slice:
		return types.NewSlice(canon(t.Elem()))
	case *types.Array:
		return types.NewArray(canon(t.Elem()), t.Len())
	case *types.Map:
		return types.NewMap(canon(t.Key()), canon(t.Elem()))
	case *types.Chan:
		return types.NewChan(t.Dir(), canon(t.Elem()))
	case *types.Named:
		if t.TypeArgs().Len() == 0 {
			return t
		}
		var as []types.Type
		for a := range t.TypeArgs().Types() {
			as = append(as, canon(a))
		}
		if inst, err := types.Instantiate(nil, t.Origin(), as, false); err == nil {
			return inst
		}
		return t
	case *types.Signature:
		return types.NewSignatureType(nil, nil, nil, canonTuple(t.Params()), canonTuple(t.Results()), t.Variadic())
	case *types.Struct:
		var fs []*types.Var
		var tags []string
		for i := range t.NumFields() {
			f := t.Field(i)
			fs = append(fs, types.NewField(f.Pos(), f.Pkg(), f.Name(), canon(f.Type()), f.Embedded()))
			tags = append(tags, t.Tag(i))
		}
		return types.NewStruct(fs, tags)
	case *types.Interface:
		if t.Empty() {
			return emptyInterface
		}
		var ms []*types.Func
		for i := range t.NumExplicitMethods() {
			m := t.ExplicitMethod(i)
			sig := canon(m.Type()).(*types.Signature)
			ms = append(ms, types.NewFunc(m.Pos(), m.Pkg(), m.Name(), sig))
		}
		var es []types.Type
		for i := range t.NumEmbeddeds() {
			es = append(es, canon(t.EmbeddedType(i)))
		}
		return types.NewInterfaceType(ms, es).Complete()
	}
	return t
}

func canonTuple(t *types.Tuple) *types.Tuple {
	var vs []*types.Var
	for v := range t.Variables() {
		vs = append(vs, types.NewParam(v.Pos(), v.Pkg(), "", canon(v.Type())))
	}
	return types.NewTuple(vs...)
}
