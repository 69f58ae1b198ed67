// remat's Jinja interpreter on its own: expressions, whitespace control, loops, assignment,
// filters, methods and errors. The expected texts of the rendering cases are what the pinned
// @huggingface/jinja renders for the same templates, except where a comment says otherwise.
#include <catch2/catch.hpp>

#include <string>

#include "base/json.h"
#include "text/chat_template.h"
#include "text/jinja_eval.h"
#include "text/jinja_parser.h"

using namespace remat;

namespace {

std::string render(const std::string& source, const std::string& messages = "[]") {
  text::ChatOptions options;
  options.bos_token = "<s>";
  options.add_generation_prompt = true;
  return text::ChatTemplate(source).render(parse_json(messages), options);
}

}  // namespace

TEST_CASE("jinja expressions follow Python's operators and precedence", "[text]") {
  CHECK(render("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}") ==
        "7|9|3|-4|1");
  CHECK(render("{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 1.5 + 1 }}|{{ 2 ** 10 }}|{{ -3 }}") ==
        "3.5|2.0|2.5|1024|-3");
  CHECK(render("{{ 'a' ~ 1 ~ 2.5 }}|{{ 'x' + 'y' }}|{{ 'ab' * 0 if false else 'no' }}") ==
        "a12.5|xy|no");
  CHECK(render("{{ 1 < 2 and 2 <= 2 }}|{{ not 1 == 2 }}|{{ 3 > 4 or 'fallback' }}") ==
        "true|true|fallback");
  CHECK(render("{{ 'b' in 'abc' }}|{{ 2 not in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ x in y }}") ==
        "true|false|true|false");
  CHECK(render("{{ [1, 'two', 3.5, true, none] }}|{{ {'a': [1, {'b': 'c'}]} }}") ==
        "[1, \"two\", 3.5, true, null]|{\"a\": [1, {\"b\": \"c\"}]}");
  CHECK(render("{{ 'it''s' }}{{ \"\\n\\t\\x41\\u00e9\" }}") == "its\n\tAé");
  CHECK(
      render("{{ undefined_name }}{{ none }}|{{ undefined_name is defined }}|{{ none is none }}") ==
      "|false|true");
  CHECK(render(
            "{{ 'yes' if [] else 'no' }}{{ 'yes' if {} else 'no' }}{{ 'yes' if '0' else 'no' }}") ==
        "nonoyes");
}

TEST_CASE("jinja attribute, subscript, slice and method access", "[text]") {
  const std::string messages =
      R"([{"role": "user", "content": " Hi there "}, {"role": "assistant", "content": "a</think>b"}])";
  CHECK(render("{{ messages[0].role }}{{ messages[0]['role'] }}{{ messages[-1].role }}{{ "
               "messages[5].role }}",
               messages) == "useruserassistant");
  CHECK(render("{% for m in messages[::-1] %}{{ m.role }},{% endfor %}{{ messages[1:] | length }}",
               messages) == "assistant,user,1");
  CHECK(render("{{ 'abcdef'[1:4] }}{{ 'abcdef'[::2] }}{{ 'héllo'[1] }}{{ [1,2,3][-2:] }}") ==
        "bcdaceé[2, 3]");
  CHECK(render("[{{ messages[0].content.strip() }}][{{ messages[0].content.lstrip() }}]",
               messages) == "[Hi there][Hi there ]");
  CHECK(render("{{ messages[1].content.split('</think>')[-1] }}{{ 'a b  c'.split() }}", messages) ==
        "b[\"a\", \"b\", \"c\"]");
  CHECK(render("{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}{{ 'aXa'.replace('a', 'b') }}{{ "
               "'abc'.startswith('ab') }}"
               "{{ 'abc'.endswith(('x', 'c')) }}") == "ABabbXbtruetrue");
  CHECK(
      render("{% set d = {'b': 1, 'a': 2} %}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"
             "{{ d.get('a') }}{{ d.get('z', 'none') }}{{ d.get('z') }}") == "b=1;a=2;2none");
  // Python's str.strip with an argument strips only those characters (@huggingface/jinja ignores
  // the argument and strips all whitespace; transformers renders with Python).
  CHECK(render("[{{ '\n  x \n'.lstrip('\n') }}][{{ 'xxaxx'.strip('x') }}][{{ 'ab\n\n'.rstrip('\n') "
               "}}]") == "[  x \n][a][ab]");
}

TEST_CASE("jinja filters", "[text]") {
  CHECK(render("{{ '  a b  ' | trim }}|{{ [1, 2, 3] | length }}|{{ 'héllo' | length }}|{{ {'a': 1} "
               "| length }}") == "a b|3|5|1");
  CHECK(render("{{ ['a', 'b'] | join(', ') }}|{{ [1, 2] | first }}|{{ [1, 2] | last }}|{{ 3 | "
               "string ~ 'x' }}") == "a, b|1|2|3x");
  CHECK(render("{{ x | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}") ==
        "d||d");
  CHECK(render("{{ 'aB' | upper }}{{ 'aB' | lower }}{{ 'aba' | replace('a', 'c') }}{{ ['a', 'b'] | "
               "list }}") == "ABabcbc[\"a\", \"b\"]");
  CHECK(render("{{ {'k': 'v', 'n': [1, 2.5, none, true]} | tojson }}|{{ 'é\"\n' | tojson }}") ==
        "{\"k\": \"v\", \"n\": [1, 2.5, null, true]}|\"é\\\"\\n\"");
  CHECK(render("{{ {'a': [1]} | tojson(indent=2) }}") == "{\n  \"a\": [\n    1\n  ]\n}");
  CHECK(render("{% for k, v in {'x': 1} | items %}{{ k }}{{ v }}{% endfor %}") == "x1");
}

TEST_CASE("jinja whitespace control: trim_blocks, lstrip_blocks and '-'", "[text]") {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  CHECK(render("{% if true %}\n  yes\n{% endif %}\nafter") == "  yes\nafter");
  CHECK(render("line\n    {% if true %}\nx\n    {% endif %}\nend") == "line\nx\nend");
  // Expressions keep their surroundings; `-` strips whitespace on its side, newlines included.
  CHECK(render("a  {{ 1 }}  b\n") == "a  1  b");
  CHECK(render("a  \n {{- 1 -}} \n  b") == "a1b");
  CHECK(render("a {%- if true -%}  \n  b  {%- endif %} c") == "ab c");
  CHECK(render("a {#- comment -#}  b{# kept #} c") == "ab c");
  // Only one trailing newline of the template goes.
  CHECK(render("x\n\n") == "x\n");
}

TEST_CASE("jinja loops, loop variables, set and namespace", "[text]") {
  const std::string three = R"([{"role": "a"}, {"role": "b"}, {"role": "c"}])";
  CHECK(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
               "{{ 'F' if loop.first }}{{ 'L' if loop.last }}/{{ loop.length }} {% endfor %}",
               three) == "103F/3 212/3 321L/3 ");
  CHECK(render("{% for m in messages %}{{ loop.previtem.role }}>{{ m.role }}>{{ loop.nextitem.role "
               "}} {% endfor %}",
               three) == ">a>b a>b>c b>c> ");
  CHECK(render("{% for m in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 3) %}{{ i }}{% "
               "endfor %}") == "01212");
  // A plain set inside a loop stays in the loop; a namespace carries values out.
  CHECK(render("{% set n = 0 %}{% set ns = namespace(n=0, seen='') %}{% for m in messages %}{% set "
               "n = n + 1 %}"
               "{% set ns.n = ns.n + 1 %}{% set ns.seen = ns.seen ~ m.role %}{% endfor %}{{ n }} "
               "{{ ns.n }} {{ ns.seen }}",
               three) == "0 3 abc");
  CHECK(render("{% set ns = namespace(a=1, b='x') %}{{ ns }}|{{ ['a', 'b'] | join }}") ==
        "{\"a\": 1, \"b\": \"x\"}|ab");
  CHECK(
      render(
          "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set block %}x{{ a }}{% endset %}[{{ block }}]") ==
      "12[x1]");
  CHECK(render("{% if 0 %}a{% elif none %}b{% elif 'x' %}c{% else %}d{% endif %}") == "c");
  CHECK(render("{{ bos_token }}{% if add_generation_prompt %}gen{% endif %}{% if tools %}tools{% "
               "endif %}") == "<s>gen");
}

TEST_CASE("jinja errors name the line, the column and the construct", "[text]") {
  auto error = [](const std::string& source, const std::string& messages = "[]") {
    try {
      render(source, messages);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("a\n  {% macro f() %}{% endmacro %}") ==
        "chat template: line 2, column 6: unsupported statement 'macro'");
  CHECK(error("{% for x in y if x %}{% endfor %}") ==
        "chat template: line 1, column 13: unsupported construct: 'for ... if' filter");
  CHECK(error("{{ 'a' | wordcount }}") ==
        "chat template: line 1, column 8: unsupported filter 'wordcount' on a string");
  CHECK(error("{{ 'a'.zfill(3) }}") ==
        "chat template: line 1, column 7: unsupported string method 'zfill()'");
  CHECK(
      error("{{ 1 is divisibleby(2) }}") ==
      "chat template: line 1, column 20: unsupported construct: test 'divisibleby' with arguments");
  CHECK(error("{% if true %}never closed") ==
        "chat template: line 1, column 14: the template ends inside a block; expected {% elif %}");
  CHECK(error("{{ 'open }}") == "chat template: line 1, column 4: string literal is never closed");
  CHECK(error("{{ 1 + }}") == "chat template: line 1, column 8: unexpected '}}' in an expression");
  CHECK(error("{{ [1] - 1 }}") ==
        "chat template: line 1, column 4: unsupported operation: list - integer");
  CHECK(error("{{ x + 1 }}") == "chat template: line 1, column 4: '+' on an undefined value");
  CHECK(error("{% set s = 'a' %}{% set s.x = 1 %}") ==
        "chat template: line 1, column 26: cannot assign an attribute of a string; only of a "
        "namespace()");
  // Nesting is bounded, so a hostile template gets a message rather than a stack overflow.
  std::string chain = "{{ 1", ifs, members = "{{ x";
  for (int i = 0; i < 1000; ++i) chain += " + 1";
  for (int i = 0; i < 1000; ++i) members += ".a";
  for (int i = 0; i < 600; ++i) ifs += "{% if true %}";
  for (const std::string& deep :
       {"{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}", chain + " }}", ifs,
        "{{ " + std::string(1000, '-') + "1 }}", members + " }}"})
    CHECK_THAT(error(deep), Catch::Contains("nested more than 128 deep"));
  CHECK(error("{{ raise_exception('Only user and assistant roles are supported!') }}") ==
        "chat template: line 1, column 4: the template raised an error: Only user and assistant "
        "roles are "
        "supported!");
}
