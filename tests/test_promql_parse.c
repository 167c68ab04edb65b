/* test_promql_parse.c - the PromQL lexer, parser, type checker and
 * printers: valid queries with their canonical printed form and result
 * type, invalid queries with Prometheus' error message and position,
 * print/parse round trips, every function's arity and argument types,
 * precedence and associativity in the tree, the tree's fields, the
 * prettified form, and hostile input (deep nesting, huge numbers,
 * invalid UTF-8, NUL bytes, unterminated strings, random bytes). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/promql.h"

struct ok_case {
    const char *q;
    const char *printed;
    enum gw_pq_type type;
};

struct err_case {
    const char *q;
    const char *err;
};

/* Expected forms follow Prometheus 3's String() and error messages. */
static const struct ok_case ok_cases[] = {
    { "1", "1", GW_PQ_T_SCALAR },
    { "+1", "1", GW_PQ_T_SCALAR },
    { "-1", "-1", GW_PQ_T_SCALAR },
    { "- -1", "1", GW_PQ_T_SCALAR },
    { "1.5", "1.5", GW_PQ_T_SCALAR },
    { ".5", "0.5", GW_PQ_T_SCALAR },
    { "5.", "5", GW_PQ_T_SCALAR },
    { "1e3", "1000", GW_PQ_T_SCALAR },
    { "1E-3", "0.001", GW_PQ_T_SCALAR },
    { "0x1F", "31", GW_PQ_T_SCALAR },
    { "0X1f", "31", GW_PQ_T_SCALAR },
    { "1_000", "1000", GW_PQ_T_SCALAR },
    { "0x_1F", "31", GW_PQ_T_SCALAR },
    { "Inf", "+Inf", GW_PQ_T_SCALAR },
    { "-Inf", "-Inf", GW_PQ_T_SCALAR },
    { "inf", "+Inf", GW_PQ_T_SCALAR },
    { "NaN", "NaN", GW_PQ_T_SCALAR },
    { "nan", "NaN", GW_PQ_T_SCALAR },
    { "010", "8", GW_PQ_T_SCALAR },
    { "09", "9", GW_PQ_T_SCALAR },
    { "123456789", "1.23456789e+08", GW_PQ_T_SCALAR },
    { "0.0001", "0.0001", GW_PQ_T_SCALAR },
    { "0.00001", "1e-05", GW_PQ_T_SCALAR },
    { "1e21", "1e+21", GW_PQ_T_SCALAR },
    { "1e6", "1e+06", GW_PQ_T_SCALAR },
    { "100000", "100000", GW_PQ_T_SCALAR },
    { "5m", "300", GW_PQ_T_SCALAR },
    { "1h30m", "5400", GW_PQ_T_SCALAR },
    { "1y", "3.1536e+07", GW_PQ_T_SCALAR },
    { "1w2d", "777600", GW_PQ_T_SCALAR },
    { "10ms", "0.01", GW_PQ_T_SCALAR },
    { "\"abc\"", "\"abc\"", GW_PQ_T_STRING },
    { "'abc'", "\"abc\"", GW_PQ_T_STRING },
    { "`abc`", "\"abc\"", GW_PQ_T_STRING },
    { "\"a\\nb\\tc\"", "\"a\\nb\\tc\"", GW_PQ_T_STRING },
    { "\"\\x41\\101\\u00e9\\U0001F600\"", "\"AA\303\251\360\237\230\200\"", GW_PQ_T_STRING },
    { "'don\\'t'", "\"don't\"", GW_PQ_T_STRING },
    { "\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\"", GW_PQ_T_STRING },
    { "foo @ 3.3335", "foo @ 3.334", GW_PQ_T_VECTOR },
    { "foo @ 0xA", "foo @ 10.000", GW_PQ_T_VECTOR },
    { "foo @ -3.3e1", "foo @ -33.000", GW_PQ_T_VECTOR },
    { "foo @ .3", "foo @ 0.300", GW_PQ_T_VECTOR },
    { "foo{NaN='bc'}", "foo{NaN=\"bc\"}", GW_PQ_T_VECTOR },
    { "foo{bar='}'}", "foo{bar=\"}\"}", GW_PQ_T_VECTOR },
    { "foo OFFSET 1m30ms", "foo offset 1m30ms", GW_PQ_T_VECTOR },
    { "test{a=\"b\"}[5y] OFFSET 3d", "test{a=\"b\"}[5y] offset 3d", GW_PQ_T_MATRIX },
    { "some_metric[5m] OFFSET 1", "some_metric[5m] offset 1s", GW_PQ_T_MATRIX },
    { "min", "min", GW_PQ_T_VECTOR },
    { "sum(sum)", "sum(sum)", GW_PQ_T_VECTOR },
    { "a + sum", "a + sum", GW_PQ_T_VECTOR },
    { "sum without(and, by, avg, count, alert, annotations)(some_metric)",
      "sum without (and, by, avg, count, alert, annotations) (some_metric)", GW_PQ_T_VECTOR },
    { "\"\\a\\b\\f\\n\\r\\t\\v\\\\\\\" - \\xFF\\377\\u1234\\U00010111\\U0001011111\342\230\272\"",
      "\"\\a\\b\\f\\n\\r\\t\\v\\\\\\\" - \\xff\\xff\341\210\264\360\220\204\221\360\220\204\22111\342\230\272\"", GW_PQ_T_STRING },
    { "foo{bar=\"baz\"}[10m5s:1h6ms]", "foo{bar=\"baz\"}[10m5s:1h6ms]", GW_PQ_T_MATRIX },
    { "`a\\nb`", "\"a\\\\nb\"", GW_PQ_T_STRING },
    { "\"\303\251\"", "\"\303\251\"", GW_PQ_T_STRING },
    { "foo", "foo", GW_PQ_T_VECTOR },
    { "foo:bar:baz", "foo:bar:baz", GW_PQ_T_VECTOR },
    { ":foo", ":foo", GW_PQ_T_VECTOR },
    { "_foo1", "_foo1", GW_PQ_T_VECTOR },
    { "foo{}", "foo", GW_PQ_T_VECTOR },
    { "foo{a=\"b\"}", "foo{a=\"b\"}", GW_PQ_T_VECTOR },
    { "foo{a=\"b\",}", "foo{a=\"b\"}", GW_PQ_T_VECTOR },
    { "foo{ a = \"b\" , c != \"d\" , e =~ \"f.*\" , g !~ \"h\" }", "foo{a=\"b\",c!=\"d\",e=~\"f.*\",g!~\"h\"}", GW_PQ_T_VECTOR },
    { "{a=\"b\"}", "{a=\"b\"}", GW_PQ_T_VECTOR },
    { "{__name__=\"foo\"}", "{__name__=\"foo\"}", GW_PQ_T_VECTOR },
    { "{__name__=~\"foo.*\"}", "{__name__=~\"foo.*\"}", GW_PQ_T_VECTOR },
    { "{\"my.metric\"}", "{__name__=\"my.metric\"}", GW_PQ_T_VECTOR },
    { "{\"my.metric\", \"a.b\"=\"x\"}", "{\"a.b\"=\"x\",__name__=\"my.metric\"}", GW_PQ_T_VECTOR },
    { "foo{\"a.b\"=\"x\"}", "foo{\"a.b\"=\"x\"}", GW_PQ_T_VECTOR },
    { "foo{b=\"2\", a=\"1\"}", "foo{a=\"1\",b=\"2\"}", GW_PQ_T_VECTOR },
    { "foo{on=\"x\", by=\"y\", offset=\"z\"}", "foo{by=\"y\",offset=\"z\",on=\"x\"}", GW_PQ_T_VECTOR },
    { "sum", "sum", GW_PQ_T_VECTOR },
    { "by", "by", GW_PQ_T_VECTOR },
    { "offset", "offset", GW_PQ_T_VECTOR },
    { "and", "and", GW_PQ_T_VECTOR },
    { "start", "start", GW_PQ_T_VECTOR },
    { "end", "end", GW_PQ_T_VECTOR },
    { "avg", "avg", GW_PQ_T_VECTOR },
    { "foo offset 5m", "foo offset 5m", GW_PQ_T_VECTOR },
    { "foo offset -5m", "foo offset -5m", GW_PQ_T_VECTOR },
    { "foo offset 1h30m", "foo offset 1h30m", GW_PQ_T_VECTOR },
    { "foo offset 90m", "foo offset 1h30m", GW_PQ_T_VECTOR },
    { "foo offset 300", "foo offset 5m", GW_PQ_T_VECTOR },
    { "foo offset 1.5", "foo offset 1s500ms", GW_PQ_T_VECTOR },
    { "foo @ 1609746000", "foo @ 1609746000.000", GW_PQ_T_VECTOR },
    { "foo @ 1609746000.5", "foo @ 1609746000.500", GW_PQ_T_VECTOR },
    { "foo @ -1", "foo @ -1.000", GW_PQ_T_VECTOR },
    { "foo @ +1", "foo @ 1.000", GW_PQ_T_VECTOR },
    { "foo @ start()", "foo @ start()", GW_PQ_T_VECTOR },
    { "foo @ end()", "foo @ end()", GW_PQ_T_VECTOR },
    { "foo @ 10 offset 5m", "foo @ 10.000 offset 5m", GW_PQ_T_VECTOR },
    { "foo offset 5m @ 10", "foo @ 10.000 offset 5m", GW_PQ_T_VECTOR },
    { "foo @ 1m", "foo @ 60.000", GW_PQ_T_VECTOR },
    { "foo[5m]", "foo[5m]", GW_PQ_T_MATRIX },
    { "foo[5m] offset 1m", "foo[5m] offset 1m", GW_PQ_T_MATRIX },
    { "foo[5m] @ 100", "foo[5m] @ 100.000", GW_PQ_T_MATRIX },
    { "foo[5m] offset 1m @ 100", "foo[5m] @ 100.000 offset 1m", GW_PQ_T_MATRIX },
    { "foo{a=\"b\"}[1h]", "foo{a=\"b\"}[1h]", GW_PQ_T_MATRIX },
    { "foo[300]", "foo[5m]", GW_PQ_T_MATRIX },
    { "foo[1y]", "foo[1y]", GW_PQ_T_MATRIX },
    { "foo[7d]", "foo[1w]", GW_PQ_T_MATRIX },
    { "foo[14d]", "foo[2w]", GW_PQ_T_MATRIX },
    { "foo[90d]", "foo[90d]", GW_PQ_T_MATRIX },
    { "foo[1h:5m]", "foo[1h:5m]", GW_PQ_T_MATRIX },
    { "foo[1h:]", "foo[1h:]", GW_PQ_T_MATRIX },
    { "foo[1h:5m] offset 10m", "foo[1h:5m] offset 10m", GW_PQ_T_MATRIX },
    { "foo[1h:5m] @ end()", "foo[1h:5m] @ end()", GW_PQ_T_MATRIX },
    { "foo[1h:5m] @ 100 offset 1m", "foo[1h:5m] @ 100.000 offset 1m", GW_PQ_T_MATRIX },
    { "rate(foo[5m])[30m:1m]", "rate(foo[5m])[30m:1m]", GW_PQ_T_MATRIX },
    { "(foo + bar)[5m:]", "(foo + bar)[5m:]", GW_PQ_T_MATRIX },
    { "sum(foo)[5m:]", "sum(foo)[5m:]", GW_PQ_T_MATRIX },
    { "1 + 2", "1 + 2", GW_PQ_T_SCALAR },
    { "1 - 2", "1 - 2", GW_PQ_T_SCALAR },
    { "1 * 2", "1 * 2", GW_PQ_T_SCALAR },
    { "1 / 2", "1 / 2", GW_PQ_T_SCALAR },
    { "1 % 2", "1 % 2", GW_PQ_T_SCALAR },
    { "1 ^ 2", "1 ^ 2", GW_PQ_T_SCALAR },
    { "1 atan2 2", "1 atan2 2", GW_PQ_T_SCALAR },
    { "1 == bool 2", "1 == bool 2", GW_PQ_T_SCALAR },
    { "1 != bool 2", "1 != bool 2", GW_PQ_T_SCALAR },
    { "1 > bool 2", "1 > bool 2", GW_PQ_T_SCALAR },
    { "1 < bool 2", "1 < bool 2", GW_PQ_T_SCALAR },
    { "1 >= bool 2", "1 >= bool 2", GW_PQ_T_SCALAR },
    { "1 <= bool 2", "1 <= bool 2", GW_PQ_T_SCALAR },
    { "foo + bar", "foo + bar", GW_PQ_T_VECTOR },
    { "foo - bar", "foo - bar", GW_PQ_T_VECTOR },
    { "foo * bar", "foo * bar", GW_PQ_T_VECTOR },
    { "foo / bar", "foo / bar", GW_PQ_T_VECTOR },
    { "foo % bar", "foo % bar", GW_PQ_T_VECTOR },
    { "foo ^ bar", "foo ^ bar", GW_PQ_T_VECTOR },
    { "foo atan2 bar", "foo atan2 bar", GW_PQ_T_VECTOR },
    { "foo == bar", "foo == bar", GW_PQ_T_VECTOR },
    { "foo != bar", "foo != bar", GW_PQ_T_VECTOR },
    { "foo > bar", "foo > bar", GW_PQ_T_VECTOR },
    { "foo < bar", "foo < bar", GW_PQ_T_VECTOR },
    { "foo >= bar", "foo >= bar", GW_PQ_T_VECTOR },
    { "foo <= bar", "foo <= bar", GW_PQ_T_VECTOR },
    { "foo and bar", "foo and bar", GW_PQ_T_VECTOR },
    { "foo or bar", "foo or bar", GW_PQ_T_VECTOR },
    { "foo unless bar", "foo unless bar", GW_PQ_T_VECTOR },
    { "foo AND bar", "foo and bar", GW_PQ_T_VECTOR },
    { "foo > bool bar", "foo > bool bar", GW_PQ_T_VECTOR },
    { "foo > bool 1", "foo > bool 1", GW_PQ_T_VECTOR },
    { "1 < bool foo", "1 < bool foo", GW_PQ_T_VECTOR },
    { "foo + 1", "foo + 1", GW_PQ_T_VECTOR },
    { "1 + foo", "1 + foo", GW_PQ_T_VECTOR },
    { "foo + on(a) bar", "foo + on (a) bar", GW_PQ_T_VECTOR },
    { "foo + on(a, b) bar", "foo + on (a, b) bar", GW_PQ_T_VECTOR },
    { "foo + ignoring(a) bar", "foo + ignoring (a) bar", GW_PQ_T_VECTOR },
    { "foo + on() bar", "foo + on () bar", GW_PQ_T_VECTOR },
    { "foo * on(a) group_left bar", "foo * on (a) group_left () bar", GW_PQ_T_VECTOR },
    { "foo * on(a) group_left(b, c) bar", "foo * on (a) group_left (b, c) bar", GW_PQ_T_VECTOR },
    { "foo * on(a) group_right(b) bar", "foo * on (a) group_right (b) bar", GW_PQ_T_VECTOR },
    { "foo * ignoring(a) group_left(b) bar", "foo * ignoring (a) group_left (b) bar", GW_PQ_T_VECTOR },
    { "foo and on(a) bar", "foo and on (a) bar", GW_PQ_T_VECTOR },
    { "foo or ignoring(a) bar", "foo or ignoring (a) bar", GW_PQ_T_VECTOR },
    { "foo unless on() bar", "foo unless on () bar", GW_PQ_T_VECTOR },
    { "foo > bool on(a) group_left(b) bar", "foo > bool on (a) group_left (b) bar", GW_PQ_T_VECTOR },
    { "foo + on(\"a.b\") bar", "foo + on (\"a.b\") bar", GW_PQ_T_VECTOR },
    { "1 + 2 * 3", "1 + 2 * 3", GW_PQ_T_SCALAR },
    { "(1 + 2) * 3", "(1 + 2) * 3", GW_PQ_T_SCALAR },
    { "1 * 2 + 3", "1 * 2 + 3", GW_PQ_T_SCALAR },
    { "2 ^ 3 ^ 2", "2 ^ 3 ^ 2", GW_PQ_T_SCALAR },
    { "(2 ^ 3) ^ 2", "(2 ^ 3) ^ 2", GW_PQ_T_SCALAR },
    { "-2 ^ 2", "-2 ^ 2", GW_PQ_T_SCALAR },
    { "(-2) ^ 2", "(-2) ^ 2", GW_PQ_T_SCALAR },
    { "-foo ^ 2", "-foo ^ 2", GW_PQ_T_VECTOR },
    { "-foo * 2", "-foo * 2", GW_PQ_T_VECTOR },
    { "2 * -foo", "2 * -foo", GW_PQ_T_VECTOR },
    { "2 ^ -1", "2 ^ -1", GW_PQ_T_SCALAR },
    { "1 - 2 - 3", "1 - 2 - 3", GW_PQ_T_SCALAR },
    { "1 - (2 - 3)", "1 - (2 - 3)", GW_PQ_T_SCALAR },
    { "1 / 2 / 3", "1 / 2 / 3", GW_PQ_T_SCALAR },
    { "a or b and c", "a or b and c", GW_PQ_T_VECTOR },
    { "a and b or c", "a and b or c", GW_PQ_T_VECTOR },
    { "a or b unless c", "a or b unless c", GW_PQ_T_VECTOR },
    { "a + b > c", "a + b > c", GW_PQ_T_VECTOR },
    { "a > b + c", "a > b + c", GW_PQ_T_VECTOR },
    { "a == b and c", "a == b and c", GW_PQ_T_VECTOR },
    { "a * b + c / d - e % f", "a * b + c / d - e % f", GW_PQ_T_VECTOR },
    { "a + b offset 5m", "a + b offset 5m", GW_PQ_T_VECTOR },
    { "-foo offset 5m", "-foo offset 5m", GW_PQ_T_VECTOR },
    { "foo + -bar", "foo + -bar", GW_PQ_T_VECTOR },
    { "--foo", "--foo", GW_PQ_T_VECTOR },
    { "+foo", "+foo", GW_PQ_T_VECTOR },
    { "-(foo)", "-(foo)", GW_PQ_T_VECTOR },
    { "-(1)", "-(1)", GW_PQ_T_SCALAR },
    { "rate(foo[5m])", "rate(foo[5m])", GW_PQ_T_VECTOR },
    { "irate(foo[1m])", "irate(foo[1m])", GW_PQ_T_VECTOR },
    { "sum(rate(foo[5m]))", "sum(rate(foo[5m]))", GW_PQ_T_VECTOR },
    { "sum by (job) (rate(foo[5m]))", "sum by (job) (rate(foo[5m]))", GW_PQ_T_VECTOR },
    { "sum(rate(foo[5m])) by (job)", "sum by (job) (rate(foo[5m]))", GW_PQ_T_VECTOR },
    { "sum without (job) (foo)", "sum without (job) (foo)", GW_PQ_T_VECTOR },
    { "sum(foo) without (job)", "sum without (job) (foo)", GW_PQ_T_VECTOR },
    { "sum by () (foo)", "sum(foo)", GW_PQ_T_VECTOR },
    { "sum by (job,) (foo)", "sum by (job) (foo)", GW_PQ_T_VECTOR },
    { "sum by (on, bool, sum, by, offset, group_left) (foo)", "sum by (on, bool, sum, by, offset, group_left) (foo)", GW_PQ_T_VECTOR },
    { "sum by (\"a.b\") (foo)", "sum by (\"a.b\") (foo)", GW_PQ_T_VECTOR },
    { "sum by (a:b) (foo)", "sum by (\"a:b\") (foo)", GW_PQ_T_VECTOR },
    { "SUM(foo)", "sum(foo)", GW_PQ_T_VECTOR },
    { "Sum by (job) (foo)", "sum by (job) (foo)", GW_PQ_T_VECTOR },
    { "avg(foo)", "avg(foo)", GW_PQ_T_VECTOR },
    { "count(foo)", "count(foo)", GW_PQ_T_VECTOR },
    { "min(foo)", "min(foo)", GW_PQ_T_VECTOR },
    { "max(foo)", "max(foo)", GW_PQ_T_VECTOR },
    { "group(foo)", "group(foo)", GW_PQ_T_VECTOR },
    { "stddev(foo)", "stddev(foo)", GW_PQ_T_VECTOR },
    { "stdvar(foo)", "stdvar(foo)", GW_PQ_T_VECTOR },
    { "topk(5, foo)", "topk(5, foo)", GW_PQ_T_VECTOR },
    { "bottomk(5, foo)", "bottomk(5, foo)", GW_PQ_T_VECTOR },
    { "quantile(0.9, foo)", "quantile(0.9, foo)", GW_PQ_T_VECTOR },
    { "count_values(\"value\", foo)", "count_values(\"value\", foo)", GW_PQ_T_VECTOR },
    { "topk by (a) (3, foo)", "topk by (a) (3, foo)", GW_PQ_T_VECTOR },
    { "topk(3, foo) by (a)", "topk by (a) (3, foo)", GW_PQ_T_VECTOR },
    { "quantile without (a) (0.5, foo)", "quantile without (a) (0.5, foo)", GW_PQ_T_VECTOR },
    { "sum(sum(foo) by (a))", "sum(sum by (a) (foo))", GW_PQ_T_VECTOR },
    { "sum (foo)", "sum(foo)", GW_PQ_T_VECTOR },
    { "sum by(a)(foo)", "sum by (a) (foo)", GW_PQ_T_VECTOR },
    { "histogram_quantile(0.9, sum by (le) (rate(http_bucket[5m])))", "histogram_quantile(0.9, sum by (le) (rate(http_bucket[5m])))", GW_PQ_T_VECTOR },
    { "label_replace(up, \"dst\", \"$1\", \"src\", \"(.*)\")", "label_replace(up, \"dst\", \"$1\", \"src\", \"(.*)\")", GW_PQ_T_VECTOR },
    { "label_join(up, \"dst\", \",\", \"a\", \"b\", \"c\")", "label_join(up, \"dst\", \",\", \"a\", \"b\", \"c\")", GW_PQ_T_VECTOR },
    { "label_join(up, \"dst\", \",\")", "label_join(up, \"dst\", \",\")", GW_PQ_T_VECTOR },
    { "round(foo)", "round(foo)", GW_PQ_T_VECTOR },
    { "round(foo, 5)", "round(foo, 5)", GW_PQ_T_VECTOR },
    { "hour()", "hour()", GW_PQ_T_VECTOR },
    { "hour(foo)", "hour(foo)", GW_PQ_T_VECTOR },
    { "time()", "time()", GW_PQ_T_SCALAR },
    { "pi()", "pi()", GW_PQ_T_SCALAR },
    { "vector(1)", "vector(1)", GW_PQ_T_VECTOR },
    { "scalar(foo)", "scalar(foo)", GW_PQ_T_SCALAR },
    { "clamp(foo, 0, 1)", "clamp(foo, 0, 1)", GW_PQ_T_VECTOR },
    { "predict_linear(foo[1h], 3600)", "predict_linear(foo[1h], 3600)", GW_PQ_T_VECTOR },
    { "quantile_over_time(0.5, foo[5m])", "quantile_over_time(0.5, foo[5m])", GW_PQ_T_VECTOR },
    { "absent(nonexistent{job=\"x\"})", "absent(nonexistent{job=\"x\"})", GW_PQ_T_VECTOR },
    { "abs(-foo)", "abs(-foo)", GW_PQ_T_VECTOR },
    { "foo # a comment", "foo", GW_PQ_T_VECTOR },
    { "foo", "foo", GW_PQ_T_VECTOR },
    { "rate(foo[5m]) > bool 0", "rate(foo[5m]) > bool 0", GW_PQ_T_VECTOR },
    { "foo{a=~\".*\", b=\"x\"}", "foo{a=~\".*\",b=\"x\"}", GW_PQ_T_VECTOR },
    { "foo{a=~\"x|y\"}", "foo{a=~\"x|y\"}", GW_PQ_T_VECTOR },
    { "{a=~\".+\"}", "{a=~\".+\"}", GW_PQ_T_VECTOR },
    { "{a!=\"\"}", "{a!=\"\"}", GW_PQ_T_VECTOR },
    { "{a!~\"\"}", "{a!~\"\"}", GW_PQ_T_VECTOR },
};

static const struct err_case err_cases[] = {
    { "foo +", "1:6: parse error: unexpected end of input" },
    { "+", "1:2: parse error: unexpected end of input" },
    { "1 +", "1:4: parse error: unexpected end of input" },
    { "foo bar", "1:5: parse error: unexpected identifier \"bar\"" },
    { "foo 1", "1:5: parse error: unexpected number \"1\"" },
    { "1 2", "1:3: parse error: unexpected number \"2\"" },
    { "(", "1:2: parse error: unclosed left parenthesis" },
    { "(foo", "1:5: parse error: unclosed left parenthesis" },
    { "()", "1:2: parse error: unexpected \")\"" },
    { "foo)", "1:5: parse error: unexpected right parenthesis ')'" },
    { "sum(foo", "1:8: parse error: unclosed left parenthesis" },
    { "foo{", "1:5: parse error: unexpected end of input inside braces" },
    { "foo{a", "1:6: parse error: unexpected end of input inside braces" },
    { "foo{a=", "1:7: parse error: unexpected end of input inside braces" },
    { "foo{a=\"b\"", "1:10: parse error: unexpected end of input inside braces" },
    { "foo{a=\"b\" c=\"d\"}", "1:11: parse error: unexpected identifier \"c\" in label matching, expected \",\" or \"}\"" },
    { "foo{a=\"b\",,}", "1:11: parse error: unexpected \",\" in label matching, expected identifier or \"}\"" },
    { "foo{,}", "1:5: parse error: unexpected \",\" in label matching, expected identifier or \"}\"" },
    { "foo{a=b}", "1:7: parse error: unexpected identifier \"b\" in label matching, expected string" },
    { "foo{1=\"b\"}", "1:5: parse error: unexpected character inside braces: '1'" },
    { "foo{a=~\"(\"}", "1:5: parse error: invalid regular expression \"(\": missing closing parenthesis (at offset 1)" },
    { "foo{a:b=\"c\"}", "1:6: parse error: unexpected character inside braces: ':'" },
    { "foo{{a=\"b\"}}", "1:5: parse error: unexpected left brace '{'" },
    { "{}", "1:1: parse error: vector selector must contain at least one non-empty matcher" },
    { "{a=\"\"}", "1:1: parse error: vector selector must contain at least one non-empty matcher" },
    { "{a=~\".*\"}", "1:1: parse error: vector selector must contain at least one non-empty matcher" },
    { "{a!~\".+\"}", "1:1: parse error: vector selector must contain at least one non-empty matcher" },
    { "foo{__name__=\"bar\"}", "1:1: parse error: metric name must not be set twice: \"foo\" or \"bar\"" },
    { "foo{__name__=~\"bar\"}", "1:1: parse error: metric name must not be set twice: \"foo\" or \"bar\"" },
    { "\"foo", "1:1: parse error: unterminated quoted string" },
    { "'foo", "1:1: parse error: unterminated quoted string" },
    { "`foo", "1:1: parse error: unterminated raw string" },
    { "\"a\\qb\"", "1:1: parse error: unknown escape sequence U+0071 'q'" },
    { "\"\\x4\"", "1:1: parse error: illegal character U+0022 '\"' in escape sequence" },
    { "\"\\xZZ\"", "1:1: parse error: illegal character U+005A 'Z' in escape sequence" },
    { "\"\\400\"", "1:1: parse error: escape sequence is an invalid Unicode code point" },
    { "\"\\uD800\"", "1:1: parse error: escape sequence is an invalid Unicode code point" },
    { "\"\\U00110000\"", "1:1: parse error: escape sequence is an invalid Unicode code point" },
    { "foo[5m", "1:7: parse error: unclosed left bracket" },
    { "foo[", "1:5: parse error: unclosed left bracket" },
    { "foo[]", "1:5: parse error: unexpected \"]\" in subquery selector, expected number or duration" },
    { "foo[5m:1m:1m]", "1:10: parse error: unexpected colon ':'" },
    { "foo[5m:1m", "1:10: parse error: unclosed left bracket" },
    { "foo[5m 1m]", "1:8: parse error: unexpected duration \"1m\" in subquery or range, expected \":\" or \"]\"" },
    { "foo[x]", "1:5: parse error: unexpected character: 'x', expected ':'" },
    { "foo[5mx]", "1:5: parse error: bad number or duration syntax: \"5mx\"" },
    { "foo]", "1:4: parse error: unexpected right bracket ']'" },
    { "foo[[5m]]", "1:5: parse error: unexpected left bracket '['" },
    { "foo[0s]", "1:5: parse error: duration must be greater than 0" },
    { "foo[0]", "1:5: parse error: duration must be greater than 0" },
    { "foo[000]", "1:5: parse error: duration must be greater than 0" },
    { "foo[0.0001:]", "1:5: parse error: duration must be greater than 0" },
    { "foo[5m:0s]", "1:8: parse error: duration must be greater than 0" },
    { "foo[1q]", "1:5: parse error: bad number or duration syntax: \"1\"" },
    { "foo[1m1h]", "1:5: parse error: not a valid duration string: \"1m1h\"" },
    { "foo[1h1h]", "1:5: parse error: not a valid duration string: \"1h1h\"" },
    { "foo[99999999999y]", "1:5: parse error: duration out of range" },
    { "foo offset", "1:11: parse error: unexpected end of input in offset, expected number or duration" },
    { "foo offset bar", "1:12: parse error: unexpected identifier \"bar\" in offset, expected number or duration" },
    { "foo offset 5m offset 1m", "1:1: parse error: offset may not be set multiple times" },
    { "foo @ 1 @ 2", "1:1: parse error: @ <timestamp> may not be set multiple times" },
    { "foo @ start() @ 1", "1:1: parse error: @ <timestamp> may not be set multiple times" },
    { "foo @", "1:6: parse error: unexpected end of input in @, expected timestamp" },
    { "foo @ bar", "1:7: parse error: unexpected identifier \"bar\" in @, expected timestamp" },
    { "foo @ start", "1:12: parse error: unexpected end of input" },
    { "foo @ start(1)", "1:13: parse error: unexpected number \"1\"" },
    { "foo @ Inf", "1:1: parse error: timestamp out of bounds for @ modifier: +Inf" },
    { "foo @ NaN", "1:1: parse error: timestamp out of bounds for @ modifier: NaN" },
    { "foo @ 1e20", "1:1: parse error: timestamp out of bounds for @ modifier: 100000000000000000000.000000" },
    { "1 offset 5m", "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "\"a\" offset 5m", "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "(foo) offset 5m", "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "sum(foo) offset 5m", "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "rate(foo[5m]) @ 1", "1:1: parse error: @ modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "1 @ 1", "1:1: parse error: @ modifier must be preceded by an instant vector selector or range vector selector or a subquery" },
    { "(foo)[5m]", "1:6: parse error: ranges only allowed for vector selectors" },
    { "rate(foo[5m])[5m]", "1:14: parse error: ranges only allowed for vector selectors" },
    { "foo offset 5m [5m]", "1:15: parse error: no offset modifiers allowed before range" },
    { "foo @ 1 [5m]", "1:9: parse error: no @ modifiers allowed before range" },
    { "1[5m]", "1:2: parse error: ranges only allowed for vector selectors" },
    { "rate(foo[5m])[5m:][1m]", "1:19: parse error: ranges only allowed for vector selectors" },
    { "foo[5m][1m:]", "1:1: parse error: subquery is only allowed on instant vector, got matrix instead" },
    { "1[5m:]", "1:1: parse error: subquery is only allowed on instant vector, got scalar instead" },
    { "\"a\"[5m:]", "1:1: parse error: subquery is only allowed on instant vector, got string instead" },
    { "1 > 1", "1:3: parse error: comparisons between scalars must use BOOL modifier" },
    { "1 == 1", "1:3: parse error: comparisons between scalars must use BOOL modifier" },
    { "foo + bool bar", "1:5: parse error: bool modifier can only be used on comparison operators" },
    { "foo * bool 1", "1:5: parse error: bool modifier can only be used on comparison operators" },
    { "foo and 1", "1:1: parse error: set operator \"and\" not allowed in binary scalar expression" },
    { "1 or foo", "1:1: parse error: set operator \"or\" not allowed in binary scalar expression" },
    { "1 unless 2", "1:1: parse error: set operator \"unless\" not allowed in binary scalar expression" },
    { "foo and on(a) group_left bar", "1:1: parse error: no grouping allowed for \"and\" operation" },
    { "foo or on(a) group_right(b) bar", "1:1: parse error: no grouping allowed for \"or\" operation" },
    { "foo + on(a) group_left(a) bar", "1:5: parse error: label \"a\" must not occur in ON and GROUP clause at once" },
    { "1 + on(a) 2", "1:1: parse error: vector matching only allowed between instant vectors" },
    { "foo + on(a) 1", "1:1: parse error: vector matching only allowed between instant vectors" },
    { "foo[5m] + 1", "1:1: parse error: binary expression must contain only scalar and instant vector types" },
    { "1 + foo[5m]", "1:5: parse error: binary expression must contain only scalar and instant vector types" },
    { "\"a\" + 1", "1:1: parse error: binary expression must contain only scalar and instant vector types" },
    { "1 + \"a\"", "1:5: parse error: binary expression must contain only scalar and instant vector types" },
    { "foo + \"a\"", "1:7: parse error: binary expression must contain only scalar and instant vector types" },
    { "-\"a\"", "1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"string\"" },
    { "-foo[5m]", "1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"range vector\"" },
    { "foo + on bar", "1:10: parse error: unexpected identifier \"bar\" in grouping opts, expected \"(\"" },
    { "foo + on(a bar", "1:12: parse error: unexpected identifier \"bar\" in grouping opts, expected \",\" or \")\"" },
    { "foo + on(a,,b) bar", "1:12: parse error: unexpected \",\" in grouping opts, expected label" },
    { "foo + group_left bar", "1:7: parse error: unexpected <group_left>" },
    { "foo + bool on(1) bar", "1:15: parse error: unexpected number \"1\" in grouping opts, expected label" },
    { "foo + on(a) bool bar", "1:13: parse error: unexpected <bool>" },
    { "rate(foo)", "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector" },
    { "rate(foo[5m], 1)", "1:1: parse error: expected 1 argument(s) in call to \"rate\", got 2" },
    { "rate()", "1:1: parse error: expected 1 argument(s) in call to \"rate\", got 0" },
    { "rate(1)", "1:6: parse error: expected type range vector in call to function \"rate\", got scalar" },
    { "rate(\"a\")", "1:6: parse error: expected type range vector in call to function \"rate\", got string" },
    { "abs(foo[5m])", "1:5: parse error: expected type instant vector in call to function \"abs\", got range vector" },
    { "abs()", "1:1: parse error: expected 1 argument(s) in call to \"abs\", got 0" },
    { "abs(foo, bar)", "1:1: parse error: expected 1 argument(s) in call to \"abs\", got 2" },
    { "round(foo, 1, 2)", "1:1: parse error: expected at most 2 argument(s) in call to \"round\", got 3" },
    { "round()", "1:1: parse error: expected at least 1 argument(s) in call to \"round\", got 0" },
    { "round(foo, bar)", "1:12: parse error: expected type scalar in call to function \"round\", got instant vector" },
    { "hour(1)", "1:6: parse error: expected type instant vector in call to function \"hour\", got scalar" },
    { "hour(foo, bar)", "1:1: parse error: expected at most 1 argument(s) in call to \"hour\", got 2" },
    { "label_join(foo)", "1:1: parse error: expected at least 3 argument(s) in call to \"label_join\", got 1" },
    { "label_join(foo, \"a\")", "1:1: parse error: expected at least 3 argument(s) in call to \"label_join\", got 2" },
    { "label_join(foo, \"a\", \"b\", 1)", "1:27: parse error: expected type string in call to function \"label_join\", got scalar" },
    { "label_replace(foo, \"a\", \"b\", \"c\")", "1:1: parse error: expected 5 argument(s) in call to \"label_replace\", got 4" },
    { "label_replace(foo, \"a\", \"b\", \"c\", 1)", "1:35: parse error: expected type string in call to function \"label_replace\", got scalar" },
    { "histogram_quantile(foo, bar)", "1:20: parse error: expected type scalar in call to function \"histogram_quantile\", got instant vector" },
    { "histogram_quantile(0.9)", "1:1: parse error: expected 2 argument(s) in call to \"histogram_quantile\", got 1" },
    { "vector(foo)", "1:8: parse error: expected type scalar in call to function \"vector\", got instant vector" },
    { "vector(\"a\")", "1:8: parse error: expected type scalar in call to function \"vector\", got string" },
    { "scalar(1)", "1:8: parse error: expected type instant vector in call to function \"scalar\", got scalar" },
    { "time(1)", "1:1: parse error: expected 0 argument(s) in call to \"time\", got 1" },
    { "pi(1)", "1:1: parse error: expected 0 argument(s) in call to \"pi\", got 1" },
    { "clamp(foo, 1)", "1:1: parse error: expected 3 argument(s) in call to \"clamp\", got 2" },
    { "predict_linear(foo, 1)", "1:16: parse error: expected type range vector in call to function \"predict_linear\", got instant vector" },
    { "quantile_over_time(foo[5m], 0.5)", "1:20: parse error: expected type scalar in call to function \"quantile_over_time\", got range vector" },
    { "foo()", "1:1: parse error: unknown function with name \"foo\"" },
    { "foo(1)", "1:1: parse error: unknown function with name \"foo\"" },
    { "Rate(foo[5m])", "1:1: parse error: unknown function with name \"Rate\"" },
    { "rate(foo[5m],)", "1:13: parse error: trailing commas not allowed in function call args" },
    { "rate(foo[5m] ,)", "1:14: parse error: trailing commas not allowed in function call args" },
    { "sum()", "1:1: parse error: no arguments for aggregate expression provided" },
    { "sum(foo, bar)", "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 1, got 2" },
    { "topk(foo)", "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 1" },
    { "topk(1)", "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 1" },
    { "topk(1, 2, foo)", "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 3" },
    { "topk(\"a\", foo)", "1:6: parse error: expected type scalar in aggregation parameter, got string" },
    { "topk(foo, bar)", "1:6: parse error: expected type scalar in aggregation parameter, got instant vector" },
    { "count_values(1, foo)", "1:14: parse error: expected type string in aggregation parameter, got scalar" },
    { "quantile(foo, 0.5)", "1:15: parse error: expected type instant vector in aggregation expression, got scalar" },
    { "sum(1)", "1:5: parse error: expected type instant vector in aggregation expression, got scalar" },
    { "sum(\"a\")", "1:5: parse error: expected type instant vector in aggregation expression, got string" },
    { "sum(foo[5m])", "1:5: parse error: expected type instant vector in aggregation expression, got range vector" },
    { "sum 1", "1:5: parse error: unexpected number \"1\"" },
    { "sum foo", "1:5: parse error: unexpected identifier \"foo\"" },
    { "{x!=\"a\"}", "1:1: parse error: vector selector must contain at least one non-empty matcher" },
    { "foo{__name__= =}", "1:15: parse error: unexpected \"=\" in label matching, expected string" },
    { "foo{__name__ == \"bar\"}", "1:15: parse error: unexpected \"=\" in label matching, expected string" },
    { "foo{__name__=\"bar\" lol}", "1:20: parse error: unexpected identifier \"lol\" in label matching, expected \",\" or \"}\"" },
    { "foo{a>=\"b\"}", "1:6: parse error: unexpected character inside braces: '>'" },
    { "foo{a*\"b\"}", "1:6: parse error: unexpected character inside braces: '*'" },
    { "foo{gibberish}", "1:14: parse error: unexpected \"}\" in label matching, expected label matching operator" },
    { "some_metric{a=\"\377\"}", "1:15: parse error: invalid UTF-8 rune" },
    { "foo[5m:1m1]", "1:8: parse error: bad number or duration syntax: \"1m1\"" },
    { "foo[5y1hs]", "1:5: parse error: unknown unit \"hs\" in duration \"5y1hs\"" },
    { "foo[5m1m]", "1:5: parse error: not a valid duration string: \"5m1m\"" },
    { "foo[\"5m\"]", "1:5: parse error: unexpected string \"\\\"5m\\\"\" in subquery selector, expected number or duration" },
    { "foo @ 9223372036854775808", "1:1: parse error: timestamp out of bounds for @ modifier: 9223372036854775808.000000" },
    { "foo @ -Inf", "1:1: parse error: timestamp out of bounds for @ modifier: -Inf" },
    { "foo and bool 10", "1:5: parse error: bool modifier can only be used on comparison operators" },
    { "MIN keep_common (some_metric)", "1:5: parse error: unexpected identifier \"keep_common\"" },
    { "MIN (some_metric) keep_common", "1:19: parse error: unexpected identifier \"keep_common\"" },
    { "sum some_metric by (test)", "1:5: parse error: unexpected identifier \"some_metric\"" },
    { "sum (some_metric) by test", "1:22: parse error: unexpected identifier \"test\" in grouping opts, expected \"(\"" },
    { "sum (some_metric) without (test) by (test)", "1:34: parse error: unexpected <by>" },
    { "sum without (test) (some_metric) by (test)", "1:34: parse error: unexpected <by>" },
    { "sum without(==)(some_metric)", "1:13: parse error: unexpected <op:==> in grouping opts, expected label" },
    { "sum () by (test)", "1:1: parse error: no arguments for aggregate expression provided" },
    { "topk(some_metric,)", "1:17: parse error: trailing commas not allowed in function call args" },
    { "some_metric OFFSET 1m[5m]", "1:22: parse error: no offset modifiers allowed before range" },
    { "some_metric @ 1234 [5m]", "1:20: parse error: no @ modifiers allowed before range" },
    { "some_metric[5m] @", "1:18: parse error: unexpected end of input in @, expected timestamp" },
    { "(foo + bar)[5m]", "1:12: parse error: ranges only allowed for vector selectors" },
    { "label_replace(a, `b`, `c\377`, `d`, `.*`)", "1:23: parse error: invalid UTF-8 rune" },
    { "-=", "1:2: parse error: unexpected \"=\"" },
    { "++-++-+-+-<", "1:11: parse error: unexpected <op:<>" },
    { "e-+=/(0)", "1:4: parse error: unexpected \"=\"" },
    { "a>b()", "1:3: parse error: unknown function with name \"b\"" },
    { "rate(avg)", "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector" },
    { "`\\``", "1:4: parse error: unterminated raw string" },
    { "\"\\", "1:1: parse error: escape sequence not terminated" },
    { "\"\\c\"", "1:1: parse error: unknown escape sequence U+0063 'c'" },
    { "\"\\x.\"", "1:1: parse error: illegal character U+002E '.' in escape sequence" },
    { "sum by", "1:7: parse error: unexpected end of input in grouping opts, expected \"(\"" },
    { "sum by (a", "1:10: parse error: unclosed left parenthesis" },
    { "sum by (a) foo", "1:12: parse error: unexpected identifier \"foo\" in aggregation" },
    { "sum by foo (bar)", "1:8: parse error: unexpected identifier \"foo\" in grouping opts, expected \"(\"" },
    { "sum by (1) (foo)", "1:9: parse error: unexpected number \"1\" in grouping opts, expected label" },
    { "sum by (\"\") (foo)", "1:9: parse error: invalid label name for grouping: \"\"" },
    { "sum(foo) by", "1:12: parse error: unexpected end of input in grouping opts, expected \"(\"" },
    { "sum without (a,,b) (foo)", "1:16: parse error: unexpected \",\" in grouping opts, expected label" },
    { "limitk(1, foo)", "1:1: parse error: limitk() is experimental and must be enabled with --enable-feature=promql-experimental-functions" },
    { "limit_ratio(0.5, foo)", "1:1: parse error: limit_ratio() is experimental and must be enabled with --enable-feature=promql-experimental-functions" },
    { "first_over_time(foo[5m])", "1:1: parse error: function \"first_over_time\" is not enabled" },
    { "mad_over_time(foo[5m])", "1:1: parse error: function \"mad_over_time\" is not enabled" },
    { "sort_by_label(foo, \"a\")", "1:1: parse error: function \"sort_by_label\" is not enabled" },
    { "double_exponential_smoothing(foo[5m], 0.5, 0.5)", "1:1: parse error: function \"double_exponential_smoothing\" is not enabled" },
    { "ts_of_max_over_time(foo[5m])", "1:1: parse error: function \"ts_of_max_over_time\" is not enabled" },
    { "on", "1:1: parse error: unexpected <on>" },
    { "bool", "1:1: parse error: unexpected <bool>" },
    { "ignoring", "1:1: parse error: unexpected <ignoring>" },
    { "group_left", "1:1: parse error: unexpected <group_left>" },
    { "atan2", "1:1: parse error: unexpected <op:atan2>" },
    { "foo !", "1:5: parse error: unexpected character after '!': '\357\277\275'" },
    { "foo =~ bar", "1:5: parse error: unexpected character after '=': '~'" },
    { "foo = bar", "1:5: parse error: unexpected \"=\"" },
    { "foo == =", "1:8: parse error: unexpected \"=\"" },
    { "1e400", "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"1e400\": value out of range" },
    { "0x", "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"0x\": invalid syntax" },
    { "1e", "1:1: parse error: bad number or duration syntax: \"1e\"" },
    { "1e+", "1:1: parse error: bad number or duration syntax: \"1e+\"" },
    { "1ee2", "1:1: parse error: bad number or duration syntax: \"1ee\"" },
    { "1..2", "1:1: parse error: bad number or duration syntax: \"1..\"" },
    { "1__0", "1:1: parse error: bad number or duration syntax: \"1__\"" },
    { "1_", "1:1: parse error: bad number or duration syntax: \"1_\"" },
    { "0deadbeef", "1:1: parse error: bad number or duration syntax: \"0de\"" },
    { "1q", "1:1: parse error: bad number or duration syntax: \"1\"" },
    { "0x1.5", "1:1: parse error: bad number or duration syntax: \"0x1.\"" },
    { "0xFFFFFFFFFFFFFFFFFF", "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"0xFFFFFFFFFFFFFFFFFF\": invalid syntax" },
    { "5mm", "1:1: parse error: bad number or duration syntax: \"5mm\"" },
    { "5m5", "1:1: parse error: bad number or duration syntax: \"5m5\"" },
    { "1.5m", "1:1: parse error: unknown unit \".\" in duration \"1.5m\"" },
    { "foo $ bar", "1:5: parse error: unexpected character: '$'" },
    { "\342\202\254", "1:1: parse error: unexpected character: '\342\202\254'" },
    { "foo{a=\"b\"}}", "1:11: parse error: unexpected character: '}'" },
};

/* ------------------------------------------------------------ helpers */

static struct gw_pq_expr *parse_opts(const char *q, size_t len, int experimental)
{
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    struct gw_pq_parse_opts o = { .experimental = experimental };
    gw_error_clear(&err);
    int rc = gw_pq_parse(q, len, &o, &e, &err);
    if (rc != GW_OK)
        fail_msg("parse of '%s' failed: rc=%d %s", q, rc, err.msg);
    return e;
}

static struct gw_pq_expr *parse_ok(const char *q) { return parse_opts(q, strlen(q), 0); }

/* Parses q, prints it into a NUL-terminated malloc'd string. */
static char *print_str(const struct gw_pq_node *n, int pretty)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    int rc = pretty ? gw_pq_format(n, &b) : gw_pq_print(n, &b);
    assert_int_equal(rc, GW_OK);
    assert_int_equal(gw_buf_putc(&b, 0), GW_OK);
    size_t len;
    return (char *)gw_buf_steal(&b, &len);
}

static char *reprint(const char *q)
{
    struct gw_pq_expr *e = parse_ok(q);
    char *s = print_str(e->root, 0);
    gw_pq_expr_free(e);
    return s;
}

static int parse_err(const char *q, size_t len, struct gw_error *err)
{
    struct gw_pq_expr *e = (struct gw_pq_expr *)(uintptr_t)1;
    gw_error_clear(err);
    int rc = gw_pq_parse(q, len, NULL, &e, err);
    if (rc == GW_OK) {
        gw_pq_expr_free(e);
        return rc;
    }
    /* out-param untouched on failure */
    assert_ptr_equal(e, (struct gw_pq_expr *)(uintptr_t)1);
    return rc;
}

/* -------------------------------------------------------------- tables */

static void test_promql_parse_valid_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
        const struct ok_case *c = &ok_cases[i];
        struct gw_pq_expr *e = parse_ok(c->q);
        char *s = print_str(e->root, 0);
        if (strcmp(s, c->printed) != 0)
            fail_msg("'%s' printed as '%s', want '%s'", c->q, s, c->printed);
        if (e->root->type != c->type)
            fail_msg("'%s' has type %s, want %s", c->q, gw_pq_type_name(e->root->type),
                     gw_pq_type_name(c->type));
        assert_int_equal(e->text_len, strlen(c->q));
        assert_memory_equal(e->text, c->q, e->text_len);
        free(s);
        gw_pq_expr_free(e);
    }
}

static void test_promql_parse_invalid_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
        const struct err_case *c = &err_cases[i];
        struct gw_error err;
        int rc = parse_err(c->q, strlen(c->q), &err);
        if (rc != GW_EPARSE)
            fail_msg("'%s': rc=%d, want GW_EPARSE", c->q, rc);
        assert_int_equal(err.code, GW_EPARSE);
        if (strcmp(err.msg, c->err) != 0)
            fail_msg("'%s': error '%s', want '%s'", c->q, err.msg, c->err);
    }
}

static void test_promql_parse_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
        char *p1 = reprint(ok_cases[i].q);
        char *p2 = reprint(p1);
        if (strcmp(p1, p2) != 0)
            fail_msg("'%s': '%s' reprints as '%s'", ok_cases[i].q, p1, p2);
        /* the pretty form parses back to the same tree */
        struct gw_pq_expr *e = parse_ok(p1);
        char *pretty = print_str(e->root, 1);
        char *p3 = reprint(pretty);
        if (strcmp(p1, p3) != 0)
            fail_msg("'%s': pretty '%s' reprints as '%s'", ok_cases[i].q, pretty, p3);
        free(p1);
        free(p2);
        free(p3);
        free(pretty);
        gw_pq_expr_free(e);
    }
}

static void test_promql_parse_multiline_and_comments(void **state)
{
    (void)state;
    char *s = reprint("sum(\n  rate(foo[5m]) # per second\n) # total\n");
    assert_string_equal(s, "sum(rate(foo[5m]))");
    free(s);
    s = reprint("foo{a=\"b\", # comment inside braces\n c=\"d\"}");
    assert_string_equal(s, "foo{a=\"b\",c=\"d\"}");
    free(s);
    s = reprint("foo # \"not a string");
    assert_string_equal(s, "foo");
    free(s);
    s = reprint("`multi\nline`");
    assert_string_equal(s, "\"multi\\nline\"");
    free(s);

    struct gw_error err;
    const char *q = "sum(\n  rate(foo[5m])\n  bar)";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "3:3: parse error: unexpected identifier \"bar\"");
    q = "foo +\n\n  )";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "3:4: parse error: unexpected right parenthesis ')'");
    q = "# only a comment";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: no expression found in input");
    q = "\"line\nbreak\"";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unterminated quoted string");
    q = "foo{a=\"b\" # c\n";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "2:1: parse error: unexpected end of input inside braces");
    q = "   ";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: no expression found in input");
    assert_int_equal(parse_err(NULL, 0, &err), GW_EPARSE);
}

/* -------------------------------------------------------- the tree */

static void test_promql_parse_precedence_tree(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("1 + 2 * 3");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(r->u.bin.rhs->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_MUL);
    assert_null(r->u.bin.vm); /* scalar operands: no vector matching */
    gw_pq_expr_free(e);

    e = parse_ok("2 ^ 3 ^ 2"); /* right-associative */
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_POW);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_NUMBER);
    assert_int_equal(r->u.bin.rhs->kind, GW_PQ_BINARY);
    gw_pq_expr_free(e);

    e = parse_ok("1 - 2 - 3"); /* left-associative */
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_SUB);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_BINARY);
    assert_true(r->u.bin.rhs->kind == GW_PQ_NUMBER && r->u.bin.rhs->u.number == 3);
    gw_pq_expr_free(e);

    e = parse_ok("-2 ^ 2"); /* unary minus binds looser than ^ */
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_UNARY);
    assert_int_equal(r->u.unary.op, GW_PQ_OP_SUB);
    assert_int_equal(r->u.unary.expr->u.bin.op, GW_PQ_OP_POW);
    gw_pq_expr_free(e);

    e = parse_ok("-foo * 2"); /* ... and as tight as * */
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_UNARY);
    gw_pq_expr_free(e);

    e = parse_ok("-1"); /* a sign on a literal folds into it */
    assert_int_equal(e->root->kind, GW_PQ_NUMBER);
    assert_true(e->root->u.number == -1.0);
    assert_int_equal(e->root->pos, 0);
    gw_pq_expr_free(e);

    e = parse_ok("a or b and c unless d");
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_OR);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_UNLESS);
    assert_int_equal(r->u.bin.rhs->u.bin.lhs->u.bin.op, GW_PQ_OP_AND);
    assert_non_null(r->u.bin.vm);
    assert_int_equal(r->u.bin.vm->card, GW_PQ_CARD_MANY_TO_MANY);
    gw_pq_expr_free(e);

    e = parse_ok("a > b + c * d ^ e");
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_GTR);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(r->u.bin.rhs->u.bin.rhs->u.bin.op, GW_PQ_OP_MUL);
    assert_int_equal(r->u.bin.rhs->u.bin.rhs->u.bin.rhs->u.bin.op, GW_PQ_OP_POW);
    gw_pq_expr_free(e);

    e = parse_ok("a atan2 b + c");
    assert_int_equal(e->root->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(e->root->u.bin.lhs->u.bin.op, GW_PQ_OP_ATAN2);
    gw_pq_expr_free(e);

    e = parse_ok("a + b offset 5m"); /* offset binds to the nearest selector */
    assert_int_equal(e->root->u.bin.lhs->u.sel.offset_ms, 0);
    assert_int_equal(e->root->u.bin.rhs->u.sel.offset_ms, 300000);
    gw_pq_expr_free(e);
}

static void test_promql_parse_selector_fields(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("foo{a=\"b\", c!~\"d.*\"}[5m] offset -1m @ 1609746000.5");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->kind, GW_PQ_MATRIX_SEL);
    assert_int_equal(r->type, GW_PQ_T_MATRIX);
    assert_string_equal(r->u.sel.name, "foo");
    assert_int_equal(r->u.sel.n_matchers, 3);
    assert_string_equal(r->u.sel.matchers[0].name, "__name__");
    assert_string_equal(r->u.sel.matchers[0].value, "foo");
    assert_string_equal(r->u.sel.matchers[1].name, "a");
    assert_int_equal(r->u.sel.matchers[1].type, GW_MATCH_EQ);
    assert_int_equal(r->u.sel.matchers[2].type, GW_MATCH_NRE);
    assert_non_null(r->u.sel.matchers[2].re);
    assert_false(gw_matcher_matches(&r->u.sel.matchers[2], "dx", 2));
    assert_true(gw_matcher_matches(&r->u.sel.matchers[2], "xd", 2));
    assert_int_equal(r->u.sel.range_ms, 300000);
    assert_int_equal(r->u.sel.offset_ms, -60000);
    assert_int_equal(r->u.sel.at, GW_PQ_AT_TIME);
    assert_int_equal(r->u.sel.at_ms, 1609746000500LL);
    assert_int_equal(r->pos, 0);
    gw_pq_expr_free(e);

    e = parse_ok("{\"my.metric\", \"a.b\"=\"x\"}");
    r = e->root;
    assert_null(r->u.sel.name);
    assert_int_equal(r->u.sel.n_matchers, 2);
    assert_string_equal(r->u.sel.matchers[0].name, "__name__");
    assert_string_equal(r->u.sel.matchers[0].value, "my.metric");
    assert_string_equal(r->u.sel.matchers[1].name, "a.b");
    gw_pq_expr_free(e);

    e = parse_ok("x[1h:5m] @ end() offset 10m");
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_SUBQUERY);
    assert_int_equal(r->u.sub.range_ms, 3600000);
    assert_int_equal(r->u.sub.step_ms, 300000);
    assert_int_equal(r->u.sub.offset_ms, 600000);
    assert_int_equal(r->u.sub.at, GW_PQ_AT_END);
    assert_int_equal(r->u.sub.expr->kind, GW_PQ_VECTOR_SEL);
    gw_pq_expr_free(e);

    e = parse_ok("x[90s:]");
    assert_int_equal(e->root->u.sub.step_ms, 0);
    assert_int_equal(e->root->u.sub.range_ms, 90000);
    gw_pq_expr_free(e);

    e = parse_ok("x @ start()");
    assert_int_equal(e->root->u.sel.at, GW_PQ_AT_START);
    gw_pq_expr_free(e);

    e = parse_ok("\"a\\x41\\101\\u00e9\\U0001F600\\n\"");
    assert_int_equal(e->root->kind, GW_PQ_STRING_LIT);
    assert_int_equal(e->root->u.str.len, 10);
    assert_memory_equal(e->root->u.str.s, "aAA\xc3\xa9\xf0\x9f\x98\x80\n", 10);
    gw_pq_expr_free(e);

    e = parse_ok("\"\\xff\""); /* byte escapes may build invalid UTF-8 */
    assert_int_equal(e->root->u.str.len, 1);
    assert_int_equal((unsigned char)e->root->u.str.s[0], 0xff);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, "\"\\xff\"");
    free(s);
    gw_pq_expr_free(e);
}

static void test_promql_parse_binary_and_aggregate_fields(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("a > bool on(x, y) group_left(z) b");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_GTR);
    assert_true(r->u.bin.return_bool);
    const struct gw_pq_vmatch *vm = r->u.bin.vm;
    assert_non_null(vm);
    assert_int_equal(vm->card, GW_PQ_CARD_MANY_TO_ONE);
    assert_true(vm->on);
    assert_true(vm->on_given);
    assert_int_equal(vm->n_labels, 2);
    assert_string_equal(vm->labels[0], "x");
    assert_string_equal(vm->labels[1], "y");
    assert_int_equal(vm->n_include, 1);
    assert_string_equal(vm->include[0], "z");
    gw_pq_expr_free(e);

    e = parse_ok("a / ignoring(i) group_right b");
    vm = e->root->u.bin.vm;
    assert_int_equal(vm->card, GW_PQ_CARD_ONE_TO_MANY);
    assert_false(vm->on);
    assert_true(vm->on_given);
    assert_int_equal(vm->n_include, 0);
    gw_pq_expr_free(e);

    e = parse_ok("a - b");
    vm = e->root->u.bin.vm;
    assert_non_null(vm);
    assert_int_equal(vm->card, GW_PQ_CARD_ONE_TO_ONE);
    assert_false(vm->on_given);
    gw_pq_expr_free(e);

    e = parse_ok("a * 2");
    assert_null(e->root->u.bin.vm);
    assert_int_equal(e->root->type, GW_PQ_T_VECTOR);
    gw_pq_expr_free(e);

    e = parse_ok("topk(3, x) without (a, b)");
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_AGGREGATE);
    assert_int_equal(r->u.agg.op, GW_PQ_AGG_TOPK);
    assert_true(r->u.agg.without);
    assert_true(r->u.agg.by_given);
    assert_true(r->u.agg.grouping_after);
    assert_int_equal(r->u.agg.n_grouping, 2);
    assert_string_equal(r->u.agg.grouping[1], "b");
    assert_int_equal(r->u.agg.param->kind, GW_PQ_NUMBER);
    assert_true(r->u.agg.param->u.number == 3);
    assert_int_equal(r->u.agg.expr->kind, GW_PQ_VECTOR_SEL);
    gw_pq_expr_free(e);

    e = parse_ok("sum by () (x)");
    r = e->root;
    assert_true(r->u.agg.by_given);
    assert_false(r->u.agg.without);
    assert_int_equal(r->u.agg.n_grouping, 0);
    assert_false(r->u.agg.grouping_after);
    assert_null(r->u.agg.param);
    gw_pq_expr_free(e);

    e = parse_ok("count_values(\"v\", x)");
    assert_int_equal(e->root->u.agg.param->kind, GW_PQ_STRING_LIT);
    assert_string_equal(e->root->u.agg.param->u.str.s, "v");
    gw_pq_expr_free(e);

    e = parse_ok("(x)");
    assert_int_equal(e->root->kind, GW_PQ_PAREN);
    assert_int_equal(e->root->u.paren->kind, GW_PQ_VECTOR_SEL);
    assert_int_equal(e->root->end, 3);
    gw_pq_expr_free(e);

    e = parse_ok("rate(x[5m])");
    assert_int_equal(e->root->u.call.func->id, GW_PQ_F_RATE);
    assert_int_equal(e->root->u.call.n_args, 1);
    assert_int_equal(e->root->pos, 0);
    assert_int_equal(e->root->end, 11);
    gw_pq_expr_free(e);
}

static void test_promql_parse_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *q;
        double v;
    } cases[] = {
        { "0x10", 16 },      { "0XfF", 255 },      { "1_000_000", 1e6 }, { "1e-3", 0.001 },
        { ".5e1", 5 },       { "010", 8 },         { "0", 0 },           { "1.25", 1.25 },
        { "5m", 300 },       { "1h30m", 5400 },    { "10ms", 0.01 },     { "1w", 604800 },
        { "1y", 31536000 },  { "-0x10", -16 },     { "9223372036854775807", 9223372036854775807.0 },
        { "99999999999999999999", 1e20 },          { "1.7976931348623157e308", 1.7976931348623157e308 },
        { "4.9e-324", 4.9e-324 },                  { "2ms", 0.002 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_pq_expr *e = parse_ok(cases[i].q);
        assert_int_equal(e->root->kind, GW_PQ_NUMBER);
        if (e->root->u.number != cases[i].v)
            fail_msg("%s = %.17g, want %.17g", cases[i].q, e->root->u.number, cases[i].v);
        gw_pq_expr_free(e);
    }
    struct gw_pq_expr *e = parse_ok("-Inf");
    assert_true(isinf(e->root->u.number) && e->root->u.number < 0);
    gw_pq_expr_free(e);
    e = parse_ok("NaN");
    assert_true(isnan(e->root->u.number));
    gw_pq_expr_free(e);

    /* printing follows Go's %v */
    static const struct {
        const char *q, *p;
    } pr[] = {
        { "0.1", "0.1" },         { "1e20", "1e+20" },     { "123456", "123456" },
        { "1234567", "1.234567e+06" }, { "0.000123", "0.000123" }, { "1.5e-7", "1.5e-07" },
        { "1e100", "1e+100" },    { "3.14159", "3.14159" }, { "4.9e-324", "5e-324" },
        { "0.3", "0.3" },         { "1/3", "1 / 3" },
    };
    for (size_t i = 0; i < sizeof pr / sizeof pr[0]; i++) {
        char *s = reprint(pr[i].q);
        if (strcmp(s, pr[i].p) != 0)
            fail_msg("%s printed as %s, want %s", pr[i].q, s, pr[i].p);
        free(s);
    }
}

/* -------------------------------------------------------- functions */

static const char *arg_for(enum gw_pq_type t)
{
    switch (t) {
    case GW_PQ_T_SCALAR: return "1";
    case GW_PQ_T_VECTOR: return "v";
    case GW_PQ_T_MATRIX: return "m[5m]";
    case GW_PQ_T_STRING: return "\"s\"";
    default: return "?";
    }
}

static void build_call(char *buf, size_t cap, const struct gw_pq_func *f, int nargs)
{
    size_t o = (size_t)snprintf(buf, cap, "%s(", f->name);
    for (int k = 0; k < nargs; k++) {
        int ti = k < f->n_args ? k : f->n_args - 1;
        const char *a = ti < 0 ? "1" : arg_for(f->arg_types[ti]);
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", a);
    }
    snprintf(buf + o, cap - o, ")");
}

static void test_promql_parse_every_function(void **state)
{
    (void)state;
    char q[512], want[600];
    for (int id = 0; id < GW_PQ_F_COUNT_; id++) {
        const struct gw_pq_func *f = gw_pq_func_by_id((enum gw_pq_func_id)id);
        assert_non_null(f);
        assert_int_equal(f->id, id);
        assert_ptr_equal(gw_pq_func_lookup(f->name, strlen(f->name)), f);
        int min = f->variadic ? f->n_args - 1 : f->n_args;
        int max = f->variadic > 0 ? min + f->variadic : f->variadic < 0 ? f->n_args + 2 : f->n_args;
        for (int n = min; n <= max; n++) {
            build_call(q, sizeof q, f, n);
            struct gw_pq_expr *e = parse_opts(q, strlen(q), 1);
            assert_int_equal(e->root->kind, GW_PQ_CALL);
            assert_ptr_equal(e->root->u.call.func, f);
            assert_int_equal(e->root->u.call.n_args, (size_t)n);
            assert_int_equal(e->root->type, f->ret);
            char *s = print_str(e->root, 0);
            assert_string_equal(s, q);
            free(s);
            gw_pq_expr_free(e);
            /* experimental ones are refused without the option */
            struct gw_error err;
            int rc = parse_err(q, strlen(q), &err);
            if (f->experimental) {
                assert_int_equal(rc, GW_EPARSE);
                snprintf(want, sizeof want, "1:1: parse error: function \"%s\" is not enabled", f->name);
                assert_string_equal(err.msg, want);
            } else {
                assert_int_equal(rc, GW_OK);
            }
        }
        /* one argument too many (bounded ones) and one too few */
        if (f->variadic >= 0) {
            build_call(q, sizeof q, f, max + 1);
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts o = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &o, &e, &err), GW_EPARSE);
            if (f->variadic == 0)
                snprintf(want, sizeof want,
                         "1:1: parse error: expected %d argument(s) in call to \"%s\", got %d",
                         f->n_args, f->name, max + 1);
            else
                snprintf(want, sizeof want,
                         "1:1: parse error: expected at most %d argument(s) in call to \"%s\", got %d",
                         max, f->name, max + 1);
            assert_string_equal(err.msg, want);
        }
        if (min > 0) {
            build_call(q, sizeof q, f, min - 1);
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts o = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &o, &e, &err), GW_EPARSE);
            assert_non_null(strstr(err.msg, "argument(s) in call to"));
        }
        /* a wrong type for the first argument */
        if (f->n_args > 0) {
            snprintf(q, sizeof q, "%s(%s", f->name,
                     f->arg_types[0] == GW_PQ_T_STRING ? "1" : "\"s\"");
            size_t o = strlen(q);
            for (int k = 1; k < min; k++)
                o += (size_t)snprintf(q + o, sizeof q - o, ", %s", arg_for(f->arg_types[k]));
            snprintf(q + o, sizeof q - o, ")");
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts op = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &op, &e, &err), GW_EPARSE);
            assert_non_null(strstr(err.msg, "expected type"));
        }
    }
    assert_null(gw_pq_func_lookup("nope", 4));
    assert_null(gw_pq_func_lookup("rat", 3));
    assert_null(gw_pq_func_by_id(GW_PQ_F_COUNT_));
    assert_int_equal(gw_pq_func_lookup("rate", 4)->id, GW_PQ_F_RATE);
    assert_int_equal(gw_pq_func_lookup("label_join", 10)->variadic, -1);
    assert_int_equal(gw_pq_func_lookup("round", 5)->variadic, 1);
    assert_true(gw_pq_func_lookup("sort_by_label", 13)->experimental);
    assert_false(gw_pq_func_lookup("histogram_quantile", 18)->experimental);
}

static void test_promql_parse_names(void **state)
{
    (void)state;
    assert_string_equal(gw_pq_type_name(GW_PQ_T_SCALAR), "scalar");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_VECTOR), "vector");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_MATRIX), "matrix");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_STRING), "string");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_ATAN2), "atan2");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_UNLESS), "unless");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_GTE), ">=");
    assert_true(gw_pq_op_is_comparison(GW_PQ_OP_NEQ));
    assert_false(gw_pq_op_is_comparison(GW_PQ_OP_POW));
    assert_true(gw_pq_op_is_set(GW_PQ_OP_OR));
    assert_false(gw_pq_op_is_set(GW_PQ_OP_ADD));
    assert_string_equal(gw_pq_agg_name(GW_PQ_AGG_COUNT_VALUES), "count_values");
    assert_string_equal(gw_pq_agg_name(GW_PQ_AGG_LIMIT_RATIO), "limit_ratio");

    struct gw_pq_expr *e = parse_opts("limitk(2, x) + limit_ratio(0.5, x)", 34, 1);
    assert_int_equal(e->root->u.bin.lhs->u.agg.op, GW_PQ_AGG_LIMITK);
    assert_int_equal(e->root->u.bin.rhs->u.agg.op, GW_PQ_AGG_LIMIT_RATIO);
    gw_pq_expr_free(e);
}

/* ------------------------------------------------------------ pretty */

static void test_promql_parse_format(void **state)
{
    (void)state;
    static const struct {
        const char *q, *want;
    } cases[] = {
        { "sum(rate(foo[5m])) by (job)", "sum by (job) (rate(foo[5m]))" },
        { "a_very_long_metric_name_number_one_for_testing_the_prettier + "
          "another_very_long_metric_name_number_two_for_testing",
          "  a_very_long_metric_name_number_one_for_testing_the_prettier\n"
          "+\n"
          "  another_very_long_metric_name_number_two_for_testing" },
        { "label_replace(some_quite_long_metric_name_here_for_sure{job=\"node-exporter\"}, "
          "\"destination_label\", \"$1\", \"source_label\", \"(.*)\")",
          "label_replace(\n"
          "  some_quite_long_metric_name_here_for_sure{job=\"node-exporter\"},\n"
          "  \"destination_label\",\n"
          "  \"$1\",\n"
          "  \"source_label\",\n"
          "  \"(.*)\"\n"
          ")" },
        { "sum by (instance) (rate(first_metric_with_a_long_name_total[5m])) / on (instance) "
          "sum by (instance) (rate(second_metric_with_a_long_name_total[5m]))",
          "  sum by (instance) (rate(first_metric_with_a_long_name_total[5m]))\n"
          "/ on (instance)\n"
          "  sum by (instance) (rate(second_metric_with_a_long_name_total[5m]))" },
        { "sum(first_quite_long_metric_name_for_the_nested_case_x + second_quite_long_metric_name_for_the_nested_case_x)",
          "sum(\n"
          "    first_quite_long_metric_name_for_the_nested_case_x\n"
          "  +\n"
          "    second_quite_long_metric_name_for_the_nested_case_x\n"
          ")" },
        { "topk(10, sum by (job, instance) (rate(node_network_receive_bytes_total_long_name{device!=\"lo\"}[5m])))",
          "topk(\n"
          "  10,\n"
          "  sum by (job, instance) (rate(node_network_receive_bytes_total_long_name{device!=\"lo\"}[5m]))\n"
          ")" },
        { "-(first_quite_long_metric_name_for_the_unary_case_x + second_quite_long_metric_name_for_the_unary_case_x)",
          "-(\n"
          "    first_quite_long_metric_name_for_the_unary_case_x\n"
          "  +\n"
          "    second_quite_long_metric_name_for_the_unary_case_x\n"
          ")" },
        { "sum by (instance, job) (max_over_time(rate(a_long_metric_name_for_the_subquery_total_abc[5m])[1h:1m]))",
          "sum by (instance, job) (\n"
          "  max_over_time(rate(a_long_metric_name_for_the_subquery_total_abc[5m])[1h:1m])\n"
          ")" },
        { "quantile_over_time(0.99, rate(a_long_metric_name_for_the_subquery_case_total_xyz{job=\"x\"}[5m])[1h:1m])",
          "quantile_over_time(\n"
          "  0.99,\n"
          "rate(a_long_metric_name_for_the_subquery_case_total_xyz{job=\"x\"}[5m])[1h:1m]\n"
          ")" },
        { "max_over_time(rate(a_long_metric_name_for_the_subquery_case_total{job=\"x\"}[5m])[1h:1m]) > bool 100",
          "max_over_time(rate(a_long_metric_name_for_the_subquery_case_total{job=\"x\"}[5m])[1h:1m]) > bool 100" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_pq_expr *e = parse_ok(cases[i].q);
        char *s = print_str(e->root, 1);
        if (strcmp(s, cases[i].want) != 0)
            fail_msg("format of '%s':\n%s\nwant:\n%s", cases[i].q, s, cases[i].want);
        free(s);
        gw_pq_expr_free(e);
    }
}

/* ------------------------------------------------------------ hostile */

static void expect_fail(const char *q, size_t len, int want_rc, const char *substr)
{
    struct gw_error err;
    int rc = parse_err(q, len, &err);
    if (rc != want_rc)
        fail_msg("rc=%d, want %d (%s)", rc, want_rc, err.msg);
    if (substr != NULL && strstr(err.msg, substr) == NULL)
        fail_msg("error '%s' lacks '%s'", err.msg, substr);
}

static char *repeat(const char *pre, size_t n, const char *mid, const char *post, size_t m)
{
    size_t lp = strlen(pre), lm = strlen(mid), lq = strlen(post);
    char *s = malloc(lp * n + lm + lq * m + 1);
    assert_non_null(s);
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o += lp)
        memcpy(s + o, pre, lp);
    memcpy(s + o, mid, lm);
    o += lm;
    for (size_t i = 0; i < m; i++, o += lq)
        memcpy(s + o, post, lq);
    s[o] = '\0';
    return s;
}

static void test_promql_parse_hostile_nesting(void **state)
{
    (void)state;
    char *q = repeat("(", 200000, "1", ")", 200000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("-", 300000, "1", "", 0);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("abs(", 100000, "x", ")", 100000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("x + ", 100000, "x", "", 0); /* left-deep tree */
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("x ^ ", 100000, "x", "", 0); /* right-deep tree */
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("sum(", 1000, "x", ")", 1000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("{a=\"b\"", 1, "", "", 0);
    expect_fail(q, strlen(q), GW_EPARSE, "inside braces");
    free(q);

    /* within the limit everything works and prints back */
    q = repeat("(", 200, "1", ")", 200);
    struct gw_pq_expr *e = parse_ok(q);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    gw_pq_expr_free(e);
    free(q);
    q = repeat("x + ", 300, "x", "", 0);
    e = parse_ok(q);
    s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    s = print_str(e->root, 1);
    assert_non_null(strchr(s, '\n'));
    free(s);
    gw_pq_expr_free(e);
    free(q);
    /* wide is fine: many arguments and matchers */
    q = repeat("x{a=\"b\",", 1, "", "c=~\"d|e\",", 2000);
    size_t l = strlen(q);
    q[l - 1] = '}';
    e = parse_ok(q);
    assert_int_equal(e->root->u.sel.n_matchers, 2002);
    gw_pq_expr_free(e);
    free(q);
    /* but not without bound: regexes own compiled code */
    q = repeat("x{", 1, "", "a=~\"b|c\",", 10001);
    q[strlen(q) - 1] = '}';
    expect_fail(q, strlen(q), GW_EPARSE, "1:1: parse error: too many label matchers in the query");
    free(q);
    q = repeat("x{", 1, "", "a=~\"b|c\",", 9999);
    q[strlen(q) - 1] = '}';
    e = parse_ok(q);
    assert_int_equal(e->root->u.sel.n_matchers, 10000);
    gw_pq_expr_free(e);
    free(q);
    /* the pretty printer measures each node once: a long, deep query
     * formats quickly */
    q = repeat("a_metric_name_that_is_not_short{label=\"value\"} + ", 500, "x", "", 0);
    e = parse_ok(q);
    s = print_str(e->root, 1);
    assert_int_equal(s[0], ' ');
    free(s);
    gw_pq_expr_free(e);
    free(q);
}

static void test_promql_parse_hostile_bytes(void **state)
{
    (void)state;
    expect_fail("foo\0bar", 7, GW_EPARSE, "unexpected character: '\\x00'");
    expect_fail("\"a\0b\"", 5, GW_OK, NULL);
    expect_fail("\"\xff\"", 3, GW_EPARSE, "1:1: parse error: invalid UTF-8 rune");
    expect_fail("`\xc3`", 3, GW_EPARSE, "invalid UTF-8 rune");
    expect_fail("foo{a=\"\xed\xa0\x80\"}", 12, GW_EPARSE, "invalid UTF-8 rune");
    expect_fail("\xff", 1, GW_EPARSE, "unexpected character: '\xef\xbf\xbd'");
    expect_fail("foo\xe2\x82", 5, GW_EPARSE, "1:4: parse error: unexpected character");
    expect_fail("\"abc", 4, GW_EPARSE, "unterminated quoted string");
    expect_fail("'abc\\", 5, GW_EPARSE, "escape sequence not terminated");
    expect_fail("\"\\u12", 5, GW_EPARSE, "escape sequence not terminated");
    expect_fail("`abc", 4, GW_EPARSE, "unterminated raw string");
    expect_fail("foo{a=\"b", 8, GW_EPARSE, "unterminated quoted string");
    expect_fail("1e999999999", 11, GW_EPARSE, "value out of range");
    expect_fail("foo[99999999999999999999999999s]", 32, GW_EPARSE, "not a valid duration string");
    expect_fail("foo[1e300]", 10, GW_EPARSE, "duration out of range");
    expect_fail("foo offset 1e300", 16, GW_EPARSE, "duration out of range");
    expect_fail("foo @ 1e300", 11, GW_EPARSE, "timestamp out of bounds");
    expect_fail("foo @ -9.3e15", 13, GW_EPARSE, "timestamp out of bounds");
    expect_fail(NULL, 5, GW_EINVAL, NULL);
    expect_fail("sum by (\"a\\x00b\") (x)", 21, GW_EPARSE,
                "1:9: parse error: invalid label name for grouping: \"a\\x00b\"");
    expect_fail("x + on(\"\\xff\") y", 16, GW_EPARSE, "invalid label name for grouping");

    /* a query past the size cap is refused before any work */
    size_t big = GW_PQ_MAX_QUERY_BYTES + 1;
    char *q = malloc(big);
    assert_non_null(q);
    memset(q, '1', big);
    expect_fail(q, big, GW_ETOOLARGE, NULL);
    /* at the cap a 1 MiB query still parses (a long number) */
    struct gw_error err;
    struct gw_pq_expr *e = NULL;
    memset(q, ' ', big);
    q[0] = 'x';
    assert_int_equal(gw_pq_parse(q, GW_PQ_MAX_QUERY_BYTES, NULL, &e, &err), GW_OK);
    gw_pq_expr_free(e);
    free(q);

    /* a string with a NUL byte in it is kept whole */
    e = parse_opts("\"a\\x00b\"", 8, 0);
    assert_int_equal(e->root->u.str.len, 3);
    assert_memory_equal(e->root->u.str.s, "a\0b", 3);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, "\"a\\x00b\"");
    free(s);
    gw_pq_expr_free(e);

    gw_pq_expr_free(NULL);
}

/* xorshift: deterministic pseudo-random input */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_promql_parse_random_input(void **state)
{
    (void)state;
    static const char *frags[] = {
        "foo", "bar{a=\"b\"}", "(", ")", "[5m]", "[1h:1m]", " offset 5m", " @ 10", " @ end()",
        " + ", " - ", " * ", " / ", " ^ ", " and ", " or ", " unless ", " > bool ", " == ",
        " on(a) ", " ignoring(b) ", " group_left(c) ", "sum", " by (x) ", " without (y) ",
        "rate(", "topk(", "count_values(", ", ", "1", "0x1f", "Inf", "NaN", "\"s\"", "'q'", "`r`",
        "-", "{", "}", "]", "[", ":", "#c\n", "\xff", "\0", "label_join(", "5m", "@", "bool",
        "histogram_quantile(", "0.9", "{\"a.b\"=~\".*\"}", "abs(", "vector(", "time()",
    };
    size_t nf = sizeof frags / sizeof frags[0];
    char q[512];
    unsigned parsed = 0;
    for (int it = 0; it < 20000; it++) {
        size_t o = 0;
        int n = 1 + (int)(rnd() % 12);
        for (int k = 0; k < n; k++) {
            const char *f = frags[rnd() % nf];
            size_t l = f[0] == '\0' ? 1 : strlen(f);
            if (o + l >= sizeof q)
                break;
            memcpy(q + o, f, l);
            o += l;
        }
        if (rnd() % 4 == 0 && o > 0) /* and some raw byte noise */
            q[rnd() % o] = (char)(rnd() & 0xff);
        struct gw_pq_expr *e = NULL;
        struct gw_error err;
        int rc = gw_pq_parse(q, o, NULL, &e, &err);
        if (rc != GW_OK) {
            assert_int_equal(rc, GW_EPARSE);
            assert_non_null(strstr(err.msg, "parse error: "));
            continue;
        }
        parsed++;
        char *p1 = print_str(e->root, 0);
        char *p2 = reprint(p1);
        /* Prometheus prints +Inf with its sign, so `Inf ^ x` prints as
         * `+Inf ^ x`, which reads back as +(Inf ^ x): the one form whose
         * printed text is not a fixed point, in Prometheus as here */
        if (strstr(p1, "Inf ^") == NULL && strcmp(p1, p2) != 0)
            fail_msg("'%.*s': '%s' reprints as '%s'", (int)o, q, p1, p2);
        char *pf = print_str(e->root, 1);
        free(pf);
        free(p1);
        free(p2);
        gw_pq_expr_free(e);
    }
    assert_true(parsed > 100);
}

/* holt_winters is Prometheus 2's name of double_exponential_smoothing: a
 * normal function under compat 2, unknown under compat 3. */
static void test_promql_parse_holt_winters_compat2(void **state)
{
    (void)state;
    const char *q = "holt_winters(x[5m], 0.5, 0.1)";
    struct gw_pq_parse_opts o2 = { .compat = 2 };
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    gw_error_clear(&err);
    assert_int_equal(gw_pq_parse(q, strlen(q), &o2, &e, &err), GW_OK);
    assert_int_equal(e->root->kind, GW_PQ_CALL);
    assert_int_equal(e->root->u.call.func->id, GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING);
    assert_false(e->root->u.call.func->experimental);
    assert_int_equal(e->root->type, GW_PQ_T_VECTOR);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    gw_pq_expr_free(e);
    /* argument checks as for any function */
    const char *bad = "holt_winters(x, 0.5, 0.1)";
    assert_int_equal(gw_pq_parse(bad, strlen(bad), &o2, &e, &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:14: parse error: expected type range vector in call to function "
                                 "\"holt_winters\", got instant vector");
    const char *few = "holt_winters(x[5m], 0.5)";
    assert_int_equal(gw_pq_parse(few, strlen(few), &o2, &e, &err), GW_EPARSE);
    assert_non_null(strstr(err.msg, "argument(s) in call to \"holt_winters\""));
    /* compat 3 (and the default, 0) as Prometheus 3: unknown */
    struct gw_pq_parse_opts o3 = { .compat = 3, .experimental = 1 };
    assert_int_equal(gw_pq_parse(q, strlen(q), &o3, &e, &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unknown function with name \"holt_winters\"");
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unknown function with name \"holt_winters\"");
    /* the new name stays experimental in both modes */
    const char *des = "double_exponential_smoothing(x[5m], 0.5, 0.1)";
    assert_int_equal(gw_pq_parse(des, strlen(des), &o2, &e, &err), GW_EPARSE);
    assert_non_null(strstr(err.msg, "is not enabled"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_parse_valid_cases),
        cmocka_unit_test(test_promql_parse_invalid_cases),
        cmocka_unit_test(test_promql_parse_round_trip),
        cmocka_unit_test(test_promql_parse_multiline_and_comments),
        cmocka_unit_test(test_promql_parse_precedence_tree),
        cmocka_unit_test(test_promql_parse_selector_fields),
        cmocka_unit_test(test_promql_parse_binary_and_aggregate_fields),
        cmocka_unit_test(test_promql_parse_numbers),
        cmocka_unit_test(test_promql_parse_every_function),
        cmocka_unit_test(test_promql_parse_holt_winters_compat2),
        cmocka_unit_test(test_promql_parse_names),
        cmocka_unit_test(test_promql_parse_format),
        cmocka_unit_test(test_promql_parse_hostile_nesting),
        cmocka_unit_test(test_promql_parse_hostile_bytes),
        cmocka_unit_test(test_promql_parse_random_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
