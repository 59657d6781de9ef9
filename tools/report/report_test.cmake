# ctest posenc_report: two quick posenc-report runs on a few rows, then compare on their JSON.
# Checks what is saved (text, JSON with the CPU description and the self-check, plots where
# Python has matplotlib), not timings.
#   cmake -DREPORT=<posenc-report> -DWORK_DIR=<scratch dir> [-DEMULATOR=<runner>] -P this
cmake_minimum_required(VERSION 3.25)

# Under scripts/test-emulated-x86.sh the report would run natively all the same: nothing new.
if(NOT "$ENV{POSENC_TEST_EMULATOR}" STREQUAL "")
  message(STATUS "posenc-report test skipped: it does not run under POSENC_TEST_EMULATOR")
  return()
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Runs posenc-report with ARGN (after `env` settings: VAR=value ...), fails the test unless it
# exits 0, and leaves its stdout in ${out_var}.
function(run_report out_var env)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${EMULATOR} ${REPORT} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr
                  WORKING_DIRECTORY "${WORK_DIR}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "posenc-report ${ARGN}: exit ${rc}\n${stdout}\n${stderr}")
  endif()
  set(${out_var} "${stdout}" PARENT_SCOPE)
endfunction()

function(expect_contains text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected to find \"${what}\" in:\n${text}")
  endif()
endfunction()

function(expect_lacks text what context)
  string(FIND "${text}" "${what}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${context}: \"${what}\" in:\n${text}")
  endif()
endfunction()

# Reads a JSON value (string(JSON GET) path) of `file`, failing the test if it is absent.
function(json_get out_var file)
  file(READ "${file}" doc)
  string(JSON value ERROR_VARIABLE error GET "${doc}" ${ARGN})
  if(error)
    message(FATAL_ERROR "${file}: ${ARGN}: ${error}")
  endif()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()

# Google Benchmark's rows of `file` (its "benchmarks" array) into ${rows_var}, the index of
# the last into ${last_var}.
function(benchmark_rows rows_var last_var file)
  json_get(rows "${file}" benchmarks)
  string(JSON n LENGTH "${rows}")
  math(EXPR last "${n} - 1")
  set(${rows_var} "${rows}" PARENT_SCOPE)
  set(${last_var} "${last}" PARENT_SCOPE)
endfunction()

function(expect_equal actual expected what)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: \"${actual}\", expected \"${expected}\"")
  endif()
endfunction()

function(expect_png file)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "missing plot ${file}")
  endif()
  file(READ "${file}" magic LIMIT 8 HEX)
  expect_equal("${magic}" "89504e470d0a1a0a" "PNG signature of ${file}")
endfunction()

# a: the ISA the dispatcher picks, two rope rows, naive and their limit, and an out-of-place
# row with its limit_copy (core rows: --quick runs no other); with plots.
set(rows_a "^rope_f32_neox/(scalar|naive)/tokens:16/|^limit_rmw/bytes:327680$")
string(APPEND rows_a "|^rope_out_f32_f32_neox/scalar/tokens:16/|^limit_copy/bytes:655360$")
run_report(out_a "POSENC_ISA=" --quick --filter "${rows_a}" --out a)
# b: forced to scalar, without the naive row (compare shows it as missing); no plots.
set(rows_b "^rope_f32_neox/scalar/tokens:16/|^limit_rmw/bytes:327680$")
run_report(out_b "POSENC_ISA=scalar" --quick --filter "${rows_b}" --out b --no-plots)

foreach(run a b)
  set(json "${WORK_DIR}/${run}/posenc-report.json")
  json_get(model "${json}" posenc cpu model)
  json_get(features "${json}" posenc cpu features)
  json_get(active "${json}" posenc cpu isa active)
  json_get(check "${json}" posenc self_check result)
  expect_equal("${check}" "PASS" "${run}: self-check")
  json_get(check_rows "${json}" posenc self_check tables 0 rows)
  string(JSON isa_rows LENGTH "${check_rows}")
  if(isa_rows LESS 1)
    message(FATAL_ERROR "${run}: the self-check's table was not read back")
  endif()
  json_get(groups "${json}" posenc groups)
  json_get(context_cpu "${json}" context posenc_cpu)
  json_get(rows "${json}" benchmarks)
  string(JSON n LENGTH "${rows}")
  if(n LESS 2)
    message(FATAL_ERROR "${run}: ${n} benchmark rows in ${json}")
  endif()
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${rows}" ${i} name)
    string(JSON rate GET "${rows}" ${i} bytes_per_second)
    if(NOT name MATCHES "^(rope_f32_neox/|limit_rmw/|rope_out_f32_f32_neox/|limit_copy/)"
       OR NOT rate GREATER 0)
      message(FATAL_ERROR "${run}: unexpected row ${name}: ${rate} bytes/s")
    endif()
  endforeach()
  if(NOT EXISTS "${WORK_DIR}/${run}/posenc-report.txt")
    message(FATAL_ERROR "${run}: no posenc-report.txt")
  endif()
  file(READ "${WORK_DIR}/${run}/posenc-report.txt" text)
  expect_contains("${text}" "rope_f32_neox tokens:16/heads:40/dim:128")
  expect_contains("${text}" "Self-check: PASS")
  expect_lacks("${text}" "Rows that did not run" "${run}")
endforeach()
json_get(forced "${WORK_DIR}/b/posenc-report.json" posenc cpu isa active)
expect_equal("${forced}" "scalar" "b: active ISA under POSENC_ISA=scalar")
expect_contains("${out_a}" "rope_f32_neox tokens:16/heads:40/dim:128")
expect_contains("${out_a}" "of limit_copy")
expect_contains("${out_a}" "of roofline")
expect_contains("${out_a}" "Self-check: ")
string(REGEX MATCH "Benchmarks: [0-9]+ min [0-9]+ s" bench_time "${out_a}")
if(NOT bench_time)
  message(FATAL_ERROR "a: the benchmarks' time is not printed:\n${out_a}")
endif()
string(REGEX MATCH "\n +655360 +[0-9.]+  [a-z0-9]+/[a-z0-9_]+\n" copy_limit "${out_a}")
if(NOT copy_limit)
  message(FATAL_ERROR "a: no limit_copy/bytes:655360 line in the limits:\n${out_a}")
endif()

# d: the dispatcher check's side-by-side re-measure, forced for every group (--pick-within 2:
# no pick can pass): the group's line shows the second ratio, and the JSON keeps the main
# run's rows (every ISA row and naive, once each), not the re-run's two.
run_report(out_d "POSENC_ISA=" --quick --pick-within 2 --filter "^rope_f32_neox/[a-z0-9]+/tokens:16/"
           --out d --no-plots)
string(REGEX MATCH "\n  rope_f32_neox +tokens:16/heads:40/dim:128 +[a-z0-9]+ +[a-z0-9]+ +[0-9.]+ +[0-9.]+  FAIL\n"
       remeasured "${out_d}")
if(NOT remeasured)
  message(FATAL_ERROR "d: no side-by-side ratio in the dispatcher check:\n${out_d}")
endif()
benchmark_rows(rows_d last_d "${WORK_DIR}/d/posenc-report.json")
set(names_d "")
foreach(i RANGE ${last_d})
  string(JSON name GET "${rows_d}" ${i} name)
  if(name IN_LIST names_d)
    message(FATAL_ERROR "d: row ${name} twice in the JSON (the re-run's rows written into it)")
  endif()
  list(APPEND names_d "${name}")
endforeach()
foreach(row scalar naive)
  if(NOT "rope_f32_neox/${row}/tokens:16/heads:40/dim:128" IN_LIST names_d)
    message(FATAL_ERROR "d: the main run's ${row} row is missing from the JSON: ${names_d}")
  endif()
endforeach()

# e: a paired group (16 MiB and more): its SIMD rows and its limit row measured in paired
# rounds, not in Google Benchmark's run (its scalar and naive rows are); the re-measure of the
# dispatcher check forced (--pick-within 2) runs in paired rounds too. Where the CPU has no
# SIMD tier there is nothing to pair: that part is skipped.
set(rows_e "^alibi_add_bf16/[a-z0-9]+/heads:32/q:1024/k:1024/causal:0$")
run_report(out_e "POSENC_ISA=" --quick --pick-within 2 --filter "${rows_e}" --out e --no-plots)
set(json_e "${WORK_DIR}/e/posenc-report.json")
json_get(available_e "${json_e}" posenc cpu isa available)
string(JSON n_available LENGTH "${available_e}")
benchmark_rows(rows_e last_e "${json_e}")
foreach(i RANGE ${last_e})
  string(JSON name GET "${rows_e}" ${i} name)
  if(NOT name MATCHES "^alibi_add_bf16/(scalar|naive)/")
    message(FATAL_ERROR "e: ${name} in Google Benchmark's rows (only the scalar and naive rows belong there)")
  endif()
endforeach()
if(n_available GREATER 1)
  json_get(paired_e "${json_e}" posenc paired rows)
  string(JSON n_paired LENGTH "${paired_e}")
  if(n_paired LESS 2)
    message(FATAL_ERROR "e: ${n_paired} rows measured in paired rounds:\n${paired_e}")
  endif()
  json_get(limit_rounds "${json_e}" posenc paired rows "limit_rmw/bytes:67108864" rounds)
  json_get(limit_rate "${json_e}" posenc paired rows "limit_rmw/bytes:67108864" bytes_per_second)
  json_get(limit_saved "${json_e}" posenc bytes_per_second "limit_rmw/bytes:67108864")
  if(limit_rounds LESS 3 OR NOT limit_rate GREATER 0 OR NOT limit_saved STREQUAL limit_rate)
    message(FATAL_ERROR "e: the limit row's paired rounds ${limit_rounds}, rate ${limit_rate}, "
                        "saved ${limit_saved}")
  endif()
  expect_contains("${out_e}" "paired rounds with the limit row: ")
  expect_lacks("${out_e}" "Rows that did not run" "e")
  string(REGEX MATCH "\n  alibi_add_bf16 +heads:32/q:1024/k:1024/causal:0 +[a-z0-9]+ +[a-z0-9]+ +[0-9.]+ +[0-9.]+  FAIL\n"
         remeasured_e "${out_e}")
  if(NOT remeasured_e)
    message(FATAL_ERROR "e: no paired re-measure in the dispatcher check:\n${out_e}")
  endif()
else()
  message(STATUS "e: no SIMD tier on this CPU: nothing measured in paired rounds")
endif()

# f: the default run's repetitions (not --quick), kept short: the scalar and naive rows run 3
# (BenchOptions::baseline_repetitions), the others 5; their names in the JSON carry no
# "/repeats:3" of Google Benchmark's, and a filter anchored with $ still finds them.
set(rows_f "^rope_f32_neox/(scalar|naive|sse4)/tokens:16/heads:40/dim:128$")
run_report(out_f "POSENC_ISA=" --min-time 0.002 --filter "${rows_f}" --out f --no-plots)
benchmark_rows(rows_f last_f "${WORK_DIR}/f/posenc-report.json")
set(medians_f "")
foreach(i RANGE ${last_f})
  string(JSON name GET "${rows_f}" ${i} name)
  string(JSON reps GET "${rows_f}" ${i} repetitions)
  if(name MATCHES "repeats")
    message(FATAL_ERROR "f: Google Benchmark's name ${name} kept in the JSON")
  endif()
  if(name MATCHES "_median$")
    list(APPEND medians_f "${name}=${reps}")
  endif()
endforeach()
list(SORT medians_f)
set(want_f "rope_f32_neox/naive/tokens:16/heads:40/dim:128_median=3"
           "rope_f32_neox/scalar/tokens:16/heads:40/dim:128_median=3")
string(FIND "${available_e}" "\"sse4\"" sse4_at)  # a JSON array of names
if(NOT sse4_at EQUAL -1)
  list(APPEND want_f "rope_f32_neox/sse4/tokens:16/heads:40/dim:128_median=5")
endif()
list(SORT want_f)
expect_equal("${medians_f}" "${want_f}" "f: rows and their repetitions")
expect_contains("${out_f}" "5 repetition(s) interleaved, scalar and naive rows 3")

run_report(out_c "" compare a/posenc-report.json b/posenc-report.json --out c)
expect_contains("${out_c}" "[2]/[1]")
expect_contains("${out_c}" "(scalar)")
# The naive row is in a only: '-' in b's columns.
string(REGEX MATCH "rope_f32_neox/naive/tokens:16/heads:40/dim:128 +[0-9.]+ +- +-" naive_row
       "${out_c}")
if(NOT naive_row)
  message(FATAL_ERROR "compare: the naive row, missing from b, is not shown as '-':\n${out_c}")
endif()
file(READ "${WORK_DIR}/c/compare.txt" compare_text)
expect_contains("${compare_text}" "limit_rmw/bytes:327680")

# Plots: where posenc-report found no Python with matplotlib it says so, and that is a skip.
string(FIND "${out_a}" "no Python with matplotlib" no_plots)
if(NOT no_plots EQUAL -1)
  message(STATUS "matplotlib not installed: plots not checked")
else()
  foreach(png a/plots/rope_f32_neox.png a/plots/overview.png c/compare.png)
    expect_png("${WORK_DIR}/${png}")
    string(REGEX REPLACE "png$" "svg" svg "${WORK_DIR}/${png}")
    file(READ "${svg}" svg_text LIMIT 400)
    expect_contains("${svg_text}" "<svg")
  endforeach()
endif()
message(STATUS "posenc-report: report, JSON and compare OK")
