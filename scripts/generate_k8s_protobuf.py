"""Build the embedded server's protobuf schema from Kubernetes' own definitions (run at development time).

The server decodes and encodes `application/vnd.kubernetes.protobuf` with the `protobuf` runtime package
and two committed files this script writes into `planner/slim/protobuf/`:

- `k8s.desc.gz`: the compiled `generated.proto` files of Kubernetes v1.28.7 (a gzip'd
  `FileDescriptorSet`, comments stripped), compiled here with grpcio-tools' protoc;
- `gojson.json`: what the `.proto` files cannot say about the JSON form, taken from the Go struct tags
  of the same release (`k8s.io/api`, `k8s.io/apimachinery`): the JSON name of a field when it differs
  from the proto name, fields inlined into their parent's JSON (`json:",inline"`), scalars whose zero
  value means "unset" (non-pointer with `omitempty`: Go's protobuf encoder writes them anyway, Go's JSON
  encoder drops them), pointers, lists and maps that Go writes as `null` when unset (no `omitempty`),
  messages that are named slices in Go (`ExtraValue`), and the API group of each proto package.

Usage (needs `pip install grpcio-tools` and the Go sources of k8s.io/api and k8s.io/apimachinery at
tag v0.28.7, the release the `.proto` files come from):

    python scripts/generate_k8s_protobuf.py --proto ../shared/k8s-proto \\
        --go-api /path/to/k8s.io/api --go-apimachinery /path/to/k8s.io/apimachinery

Outputs are deterministic: running it twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pb2 import FieldDescriptorProto
from grpc_tools import protoc

OUT_DIR = Path(__file__).resolve().parent.parent / "planner" / "slim" / "protobuf"
STRUCT = re.compile(r"^type (\w+) struct \{")
NAMED_SLICE = re.compile(r"^type (\w+) \[\]\w+\s*$")
GROUP_NAME = re.compile(r'^const GroupName = "([^"]*)"', re.MULTILINE)
TAG = re.compile(r'(\w+):"([^"]*)"')
# Go types whose JSON form is hand-written (MarshalJSON) rather than a struct's fields: the codec
# converts them itself, so their proto fields need no Go tags.
CUSTOM_JSON = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Patch",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
}
# Go types declared as another package's struct (`type List metav1.List`) take that struct's fields.
SAME_STRUCT = {"k8s.io.api.core.v1.List": "k8s.io.apimachinery.pkg.apis.meta.v1.List"}


@dataclass(frozen=True)
class GoField:
    number: int
    json: str
    omitempty: bool
    inline: bool
    pointer: bool


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    files = sorted(p.relative_to(args.proto).as_posix() for p in args.proto.rglob("generated.proto"))
    descriptors = compile_protos(args.proto, files)
    table = go_json_table(descriptors, go_roots(args))
    write_outputs(descriptors, table, args.out)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--proto", type=Path, required=True, help="root holding k8s.io/**/generated.proto")
    parser.add_argument("--go-api", type=Path, required=True, help="k8s.io/api sources (v0.28.7)")
    parser.add_argument("--go-apimachinery", type=Path, required=True, help="k8s.io/apimachinery sources")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where to write (default: %(default)s)")
    return parser.parse_args(argv)


def go_roots(args: argparse.Namespace) -> dict[str, Path]:
    return {"k8s.io/api/": args.go_api, "k8s.io/apimachinery/": args.go_apimachinery}


def compile_protos(root: Path, files: list[str]) -> descriptor_pb2.FileDescriptorSet:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k8s.desc"
        code = protoc.main(
            ["protoc", f"-I{root}", "--include_imports", f"--descriptor_set_out={out}", *files]
        )
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def go_json_table(descriptors: descriptor_pb2.FileDescriptorSet, roots: dict[str, Path]) -> dict[str, object]:
    groups: dict[str, str] = {}
    messages: dict[str, dict[str, object]] = {}
    lists: list[str] = []
    problems: list[str] = []
    for file in descriptors.file:
        go_dir = go_package_dir(file.name, roots)
        structs, named_slices, group = parse_go_package(go_dir)
        if group is not None:
            version = file.package.rsplit(".", 1)[1]
            groups[file.package] = f"{group}/{version}" if group else version
        for message in file.message_type:
            full_name = f"{file.package}.{message.name}"
            if full_name in CUSTOM_JSON:
                continue
            if message.name in named_slices:
                lists.append(full_name)
                continue
            go = structs.get(message.name)
            if full_name in SAME_STRUCT:
                continue
            if go is None:
                problems.append(f"{full_name}: no Go struct in {go_dir}")
                continue
            entry = message_entry(full_name, message, go, problems)
            if entry:
                messages[full_name] = entry
    for alias, original in SAME_STRUCT.items():
        if original in messages:
            messages[alias] = messages[original]
    if problems:
        raise SystemExit("\n".join(problems))
    return {
        "groups": dict(sorted(groups.items())),
        "lists": sorted(lists),
        "messages": dict(sorted(messages.items())),
    }


def go_package_dir(proto_file: str, roots: dict[str, Path]) -> Path:
    for prefix, root in roots.items():
        if proto_file.startswith(prefix):
            return root / Path(proto_file[len(prefix) :]).parent
    raise SystemExit(f"{proto_file}: not under k8s.io/api or k8s.io/apimachinery")


def parse_go_package(directory: Path) -> tuple[dict[str, dict[int, GoField]], set[str], str | None]:
    """Struct fields with a protobuf tag, by struct and field number; named slice types; the group."""
    structs: dict[str, dict[int, GoField]] = {}
    named_slices: set[str] = set()
    group = None
    for path in sorted(directory.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text()
        found = GROUP_NAME.search(text)
        if found:
            group = found.group(1)
        current: dict[int, GoField] | None = None
        for line in text.splitlines():
            if (start := STRUCT.match(line)) is not None:
                current = structs.setdefault(start.group(1), {})
            elif (alias := NAMED_SLICE.match(line)) is not None:
                named_slices.add(alias.group(1))
            elif current is not None and line.startswith("}"):
                current = None
            elif current is not None and "`" in line and not line.lstrip().startswith("//"):
                field = parse_go_field(line)
                if field is not None:
                    current[field.number] = field
    return structs, named_slices, group


def parse_go_field(line: str) -> GoField | None:
    declaration, tags_text = line.split("`", 1)
    tags = dict(TAG.findall(tags_text))
    if "protobuf" not in tags or tags["protobuf"] == "-":
        return None
    json_tag = tags.get("json", "").split(",")
    words = declaration.split()
    go_type = words[-1]
    return GoField(
        number=int(tags["protobuf"].split(",")[1]),
        json=json_tag[0] or words[0],  # no JSON name: Go uses the field's own
        omitempty="omitempty" in json_tag[1:],
        inline="inline" in json_tag[1:],
        pointer=go_type.startswith("*"),
    )


def message_entry(
    full_name: str, message: descriptor_pb2.DescriptorProto, go: dict[int, GoField], problems: list[str]
) -> dict[str, object]:
    names: dict[str, str] = {}
    inline: list[str] = []
    omit_zero: list[str] = []
    null_when_unset: list[str] = []
    for field in message.field:
        tag = go.get(field.number)
        if tag is None:
            problems.append(f"{full_name}.{field.name}: no Go field with protobuf number {field.number}")
            continue
        repeated = field.label == FieldDescriptorProto.LABEL_REPEATED
        if tag.inline:
            inline.append(field.name)
        elif tag.json != field.name:
            names[field.name] = tag.json
        scalar = not repeated and field.type != FieldDescriptorProto.TYPE_MESSAGE
        nil_able = repeated or tag.pointer or field.type == FieldDescriptorProto.TYPE_BYTES
        if not tag.omitempty and not tag.inline and nil_able:
            null_when_unset.append(field.name)
        elif scalar and tag.omitempty and not tag.pointer:
            omit_zero.append(field.name)
    entry: dict[str, object] = {}
    for key, value in (
        ("names", names),
        ("inline", inline),
        ("omitZero", omit_zero),
        ("null", null_when_unset),
    ):
        if value:
            entry[key] = value
    return entry


def write_outputs(descriptors: descriptor_pb2.FileDescriptorSet, table: dict[str, object], out: Path) -> None:
    for file in descriptors.file:
        file.ClearField("source_code_info")
    raw = descriptors.SerializeToString(deterministic=True)
    (out / "k8s.desc.gz").write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    (out / "gojson.json").write_text(one_entry_per_line(table))
    print(
        f"wrote {out / 'k8s.desc.gz'} ({len(raw)} bytes uncompressed) and {out / 'gojson.json'}",
        file=sys.stderr,
    )


def one_entry_per_line(table: dict[str, object]) -> str:
    """JSON with one line per group, list type and message, so a regeneration diffs readably."""
    sections = []
    for key, value in table.items():
        if isinstance(value, dict):
            lines = [f"  {json.dumps(k)}: {json.dumps(v, separators=(', ', ': '))}" for k, v in value.items()]
        else:
            lines = [f"  {json.dumps(item)}" for item in value]  # type: ignore[attr-defined]
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        sections.append(f" {json.dumps(key)}: {opening}\n" + ",\n".join(lines) + f"\n {closing}")
    return "{\n" + ",\n".join(sections) + "\n}\n"


if __name__ == "__main__":
    sys.exit(main())
