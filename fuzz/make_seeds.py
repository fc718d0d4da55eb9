"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/), except request_snapshot's,
which its target writes itself (STRATA_FUZZ_WRITE_SEEDS). Seeds are small valid inputs of each
format, taken from the project's shared files, the presets `strata make-model` writes, and
hand-written cases; the fuzzer mutates from them.

    python3 fuzz/make_seeds.py --strata build/release/strata
"""
import argparse
import json
import os
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
PRESETS = ["flash-tiny", "pro-tiny", "qwen3.5-tiny", "qwen3.5-moe-tiny", "deepseek-v3.2-tiny", "glm5-tiny",
           "gemma4-tiny", "gemma4-kv-tiny", "gemma4-e-tiny", "gemma4-moe-tiny"]


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, pad=0):
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, size in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + size]}
        blob += bytes((i * 37) & 255 for i in range(size))
    h = json.dumps(header).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + blob


def safetensors_seeds():
    write("safetensors_header", "bf16_f32", safetensors(
        [("model.embed_tokens.weight", "BF16", [4, 8], 64), ("model.norm.weight", "F32", [8], 32)],
        {"format": "pt"}, pad=6))
    write("safetensors_header", "fp8_scales", safetensors(
        [("layers.0.attn.wq.weight", "F8_E4M3", [16, 8], 128), ("layers.0.attn.wq.scale", "F8_E8M0", [1, 1], 1),
         ("layers.0.ffn.experts.0.w1.weight", "I8", [8, 4], 32), ("layers.0.ffn.gate.tid2eid", "I32", [5, 2], 40)]))
    write("safetensors_header", "scalars_and_empty", safetensors(
        [("a", "F64", [], 8), ("b", "I64", [0, 3], 0), ("c", "BOOL", [2], 2), ("d", "F16", [1, 1, 2], 4),
         ("e", "U8", [3], 3), ("f", "I16", [2], 4)]))
    write("safetensors_header", "overlap", struct.pack("<Q", 96) + json.dumps(
        {"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode().ljust(96) + bytes(12))


def config_seeds(presets):
    for name in sorted(os.listdir(os.path.join(SHARED, "models"))):
        with open(os.path.join(SHARED, "models", name, "config.json"), "rb") as f:
            write("model_config", name, b"\x00" + f.read())
    for i, p in enumerate(PRESETS):
        with open(os.path.join(presets, p, "config.json"), "rb") as f:
            write("model_config", p, bytes([i & 15]) + f.read())


def trimmed_tokenizer(path, keep):
    with open(path) as f:
        t = json.load(f)
    m = t["model"]
    vocab = {k: v for k, v in m["vocab"].items() if v < keep}
    merges = []
    for mg in m["merges"]:
        a, b = mg if isinstance(mg, list) else mg.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
    m["vocab"], m["merges"] = vocab, merges
    t["added_tokens"] = t["added_tokens"][:12]
    return json.dumps(t, ensure_ascii=False)


def tokenizer_roundtrip_seeds():
    texts = {
        "english": "Hello, world! It's 2026: the quick brown fox   jumps\n\nover 1234567 lazy dogs.",
        "cjk_mixed": "你好，世界。カタカナとひらがな 한국어 mixed123 ＡＢＣ",
        "specials": "<｜begin▁of▁sentence｜>User: hi<｜end▁of▁sentence｜><|im_start|>user\nhi<|im_end|><think>x</think>",
        "unicode_edges": "e\u0301 \u00e9 \u212b \ufb01 \U0001F600\U0001F469\u200d\U0001F4BB \t\r\n  \u00a0 \u3000 \x00\x7f",
        "code": "def f(x):\n    return {'a': [1, 2.5e-3, None]}  # comment\n\tif x >= 0x1F: pass\n",
    }
    for i, (name, text) in enumerate(texts.items()):
        for tok in range(2):
            write("tokenizer_roundtrip", f"{name}_{tok}", bytes([(tok << 1) | (i & 1)]) + text.encode("utf-8", "surrogatepass"))
    write("tokenizer_roundtrip", "invalid_utf8", b"\x02ab\xff\xfe\xc3(\xe2\x82 \xf0\x9f\x98")


def tokenizer_seeds(presets):
    cfg = {"add_bos_token": True, "bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}
    write("tokenizer_json", "deepseek_v3_trimmed",
          trimmed_tokenizer(os.path.join(SHARED, "tokenizers", "deepseek-v3", "tokenizer.json"), 700) + "\0" +
          json.dumps(cfg, ensure_ascii=False))
    write("tokenizer_json", "qwen3_trimmed",
          trimmed_tokenizer(os.path.join(SHARED, "tokenizers", "qwen3", "tokenizer.json"), 700))
    d = os.path.join(presets, "gemma4-tiny")
    with open(os.path.join(d, "tokenizer.json"), "rb") as f, open(os.path.join(d, "tokenizer_config.json"), "rb") as g:
        write("tokenizer_json", "gemma4_tiny", f.read() + b"\0" + g.read())


CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "system_multi_turn": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Add."}, {"role": "user", "content": "3+3?"}],
    "tools": {"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"days\": 3}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": -2}"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                  "days": {"type": "integer"}}, "required": ["city"]}}}]},
    "content_parts": {"messages": [{"role": "developer", "content": [{"type": "text", "text": "Rules."}]},
                                   {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}],
                      "kwargs": {"enable_thinking": False}},
}


def chat_render_seeds():
    for fmt in range(4):
        for i, (name, conv) in enumerate(CONVERSATIONS.items()):
            opts = (fmt << 6) | ((i * 9) & 63)
            write("chat_render", f"{name}_{fmt}", bytes([opts]) + json.dumps(conv, ensure_ascii=False).encode())


def jinja_seeds(presets):
    for name in ("qwen3", "deepseek-v3"):
        with open(os.path.join(SHARED, "tokenizers", name, "tokenizer_config.json")) as f:
            write("jinja_template", name, json.load(f)["chat_template"])
    with open(os.path.join(presets, "gemma4-tiny", "tokenizer_config.json")) as f:
        write("jinja_template", "gemma4_tiny", json.load(f)["chat_template"])
    write("jinja_template", "features", """{%- macro show(m, sep=', ') -%}{{ m.role | upper }}{{ sep }}{{ m.content | tojson }}{%- endmacro -%}
{%- set ns = namespace(n=0) -%}
{%- for m in messages if m.role != 'tool' -%}{% set ns.n = ns.n + 1 %}{{ loop.index }}:{{ show(m) }}
{%- if m.tool_calls is defined %}{% for c in m.tool_calls %}[{{ c.function.name }}({{ c.function.arguments | tojson }})]{% endfor %}{% endif %}
{% endfor -%}
{{ ns.n }} {{ tools | length }} {{ (messages | map(attribute='role') | list) | join('/') }} {{ 'x' * 3 }} {{ [1,2,3][1:] }}
{%- if add_generation_prompt and not (bos_token in ['a', 'b']) %}{{ raise_exception('done') if false else 'ok' }}{% endif %}
{{ "%s-%d" | format('a', 2) }} {{ {'k': 1}.items() | list }} {{ 'A b'.split(' ') | reverse | join }} {{ range(3) | sum }}""")


D = "｜DSML｜"
EOS = "<｜end▁of▁sentence｜>"


def dsml_call(block):
    return (f"\n\n<{D}{block}>\n<{D}invoke name=\"get_weather\">\n"
            f"<{D}parameter name=\"city\" string=\"true\">Oslo</{D}parameter>\n"
            f"<{D}parameter name=\"days\" string=\"false\">3</{D}parameter>\n</{D}invoke>\n</{D}{block}>")


def chat_output_seeds():
    # choice: bit 0 = starts in reasoning, bits 1.. = the format (v4, v3.2, qwen3 template, deepseek-v3 template)
    cases = {
        "v4_thinking_tool": (1, "Check the tool.</think>Let me look." + dsml_call("tool_calls") + EOS),
        "v4_plain": (0, "2 + 2 = 4." + EOS),
        "v32_tool": (2, "Sure." + dsml_call("function_calls") + EOS),
        "v32_thinking": (3, "Hmm.</think>Fine." + EOS),
        "qwen3_tool": (4, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"),
        "qwen3_think": (5, "I need the tool.</think>\n\nAnswer: <b>bold</b> 42<|im_end|>"),
        "dsv3_template": (6, "<think>\nok\n</think>\n\nHi <｜tool▁calls▁begin｜>"),
    }
    for name, (choice, text) in cases.items():
        write("chat_output", name, bytes([choice, 0x35]) + text.encode())


def openai_seeds():
    tools = CONVERSATIONS["tools"]["tools"]
    bodies = {
        "chat_basic": (0, {"model": "strata", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16,
                           "temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["\n\n", "END"], "n": 2}),
        "chat_tools_required": (4, {"model": "strata", "messages": [{"role": "user", "content": "Weather?"}], "tools": tools,
                                    "tool_choice": "required", "stream": True, "stream_options": {"include_usage": True}}),
        "chat_named_tool": (8, {"messages": [{"role": "user", "content": "x"}], "tools": tools,
                                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                                "reasoning_effort": "high", "chat_template_kwargs": {"enable_thinking": True}}),
        "chat_json_schema": (12, {"messages": [{"role": "user", "content": "A city"}], "logprobs": True, "top_logprobs": 3,
                                  "response_format": {"type": "json_schema", "json_schema": {"name": "city", "strict": True,
                                  "schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                             "pop": {"type": "integer", "minimum": 0}, "tags": {"type": "array",
                                             "items": {"enum": ["a", "b"]}, "maxItems": 3}}, "required": ["name"],
                                             "additionalProperties": False}}},
                                  "logit_bias": {"15": -100, "42": 5}, "frequency_penalty": 0.5, "presence_penalty": -0.5}),
        "completion_text": (1, {"model": "strata", "prompt": "Once upon a time", "max_tokens": 8, "echo": True, "logprobs": 2}),
        "completion_ids": (1, {"prompt": [[1, 2, 3], [4, 5]], "max_tokens": 4, "n": 1, "stop": "x", "seed": 9}),
        "completion_strings": (1, {"prompt": ["a", "b c"], "response_format": {"type": "json_object"}, "top_k": 5,
                                   "min_p": 0.1, "repetition_penalty": 1.1}),
        "responses_text": (2, {"model": "strata", "input": "Hello", "instructions": "Be brief.", "max_output_tokens": 32,
                               "reasoning": {"effort": "low"}}),
        "responses_items": (2, {"input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
                                          {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
                                          {"type": "function_call_output", "call_id": "c1", "output": "sunny"}],
                                "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
                                "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
                                "stream": True}),
    }
    for name, (choice, body) in bodies.items():
        write("openai_request", name, bytes([choice]) + json.dumps(body, ensure_ascii=False).encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as presets:
        for p in PRESETS:
            subprocess.run([args.strata, "make-model", "--preset", p, "--seed", "1", "--out", os.path.join(presets, p)],
                           check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        safetensors_seeds()
        config_seeds(presets)
        tokenizer_seeds(presets)
        tokenizer_roundtrip_seeds()
        chat_render_seeds()
        jinja_seeds(presets)
        chat_output_seeds()
        openai_seeds()


if __name__ == "__main__":
    main()
