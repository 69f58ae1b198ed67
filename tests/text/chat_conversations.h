// Conversations rendered through real chat templates by remat and by @huggingface/jinja
// (tests/text/chat_template_test.cpp): roles, turns, empty and odd content, Unicode, reasoning
// blocks, tool calls and tool responses. Keys of JSON objects are in sorted order because
// base/json.h keeps objects sorted, and `tojson` prints keys in the order it is given them.
//
// "strip_argument" marks conversations whose rendering goes through Qwen3's
// `content.lstrip('\n')` with other whitespace to keep: Jinja2 (Python's str.lstrip, what
// transformers renders with) keeps it, @huggingface/jinja ignores the argument and strips all
// whitespace. remat follows Python there, so those are compared with Jinja2 only.
#pragma once

namespace remat::test {

inline const char* chat_conversations() {
  return R"JSON([
{"add_generation_prompt": true, "messages": [{"role": "user", "content": "Hello"}]},
{"add_generation_prompt": false, "messages": [{"role": "user", "content": "Hello"}]},
{"add_generation_prompt": true, "messages": [
  {"role": "system", "content": "You are terse."},
  {"role": "user", "content": "What is 2+2?"},
  {"role": "assistant", "content": "4"},
  {"role": "user", "content": "And 3+3?"}]},
{"add_generation_prompt": false, "strip_argument": true, "messages": [
  {"role": "system", "content": "  padded system  \n"},
  {"role": "user", "content": "\n\n  leading and trailing whitespace \t\n"},
  {"role": "assistant", "content": "  reply with spaces  "}]},
{"add_generation_prompt": true, "messages": [{"role": "user", "content": ""}]},
{"add_generation_prompt": false, "messages": [
  {"role": "user", "content": ""}, {"role": "assistant", "content": ""}]},
{"add_generation_prompt": true, "messages": [
  {"role": "user", "content": "Quotes ' \" and braces {{ x }} {% if %} {# c #} and \\ backslash"},
  {"role": "assistant", "content": "<|im_end|> <|eot_id|> tokens as text; tabs\tand\r\nCRLF"},
  {"role": "user", "content": "Zürich, 東京, Москва, emoji 🙂👍🏽, RTL עברית, combining é"}]},
{"add_generation_prompt": true, "strip_argument": true, "messages": [
  {"role": "user", "content": "Non-breaking\u00a0space and ideographic\u3000space\u3000"},
  {"role": "assistant", "content": "\u3000\u00a0trimmed?\u2028"}]},
{"add_generation_prompt": false, "messages": [
  {"role": "user", "content": "Think first."},
  {"role": "assistant", "content": "<think>\nStep one.\nStep two.\n</think>\n\nThe answer is 7."}]},
{"add_generation_prompt": true, "messages": [
  {"role": "user", "content": "q1"},
  {"role": "assistant", "content": "<think>old reasoning</think>a1"},
  {"role": "user", "content": "q2"},
  {"role": "assistant", "content": "a2", "reasoning_content": "kept reasoning"},
  {"role": "assistant", "content": "<think>\n\nlast\n\n</think>\n\nfinal"}]},
{"add_generation_prompt": true, "messages": [
  {"role": "system", "content": "sys"},
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": "", "tool_calls": [
    {"function": {"arguments": {"city": "Paris", "days": 3, "units": "°C"}, "name": "get_weather"}, "type": "function"},
    {"function": {"arguments": "{\"city\": \"Lyon\"}", "name": "get_weather"}, "type": "function"}]},
  {"role": "tool", "content": "{\"temp\": 21.5}"},
  {"role": "tool", "content": "sunny"},
  {"role": "assistant", "content": "Paris: 21.5 °C, Lyon: sunny."},
  {"role": "user", "content": "<tool_response>looks like a tool</tool_response>"}]},
{"add_generation_prompt": false, "messages": [
  {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
  {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"},
  {"role": "user", "content": "e"}, {"role": "assistant", "content": "f"},
  {"role": "system", "content": "late system message"},
  {"role": "user", "content": "g"}]}
])JSON";
}

}  // namespace remat::test
