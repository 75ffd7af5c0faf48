#!/usr/bin/env bash
# Runs the whole test suite and ends with the plain line `N passed, N failed`.
# Exit status is the test run's own.
set -uo pipefail

out_dir=.build/test-results
rm -rf "$out_dir"
mkdir -p "$out_dir"

# Serial: many tests block on loopback I/O, and on a 2-core machine parallel blocking tests can
# starve the cooperative thread pool that the async tests need.
run_suite() {
    swift test -Xswiftc -warnings-as-errors --no-parallel --xunit-output "$out_dir/xunit.xml" "$@" 2>&1 \
        | tee "$out_dir/output.log"
    return "${PIPESTATUS[0]}"
}

run_suite "$@"
status=$?

# The server's protocol suites a second time with the server's state in PostgreSQL (docs/server.md, `--store`):
# the same tests on the second store, through the shared throwaway cluster. Only on a full run.
postgres_suites='SynchroServerTests\.(ConnectEndpointTests|PushEndpointTests|PullEndpointTests|RebuildEndpointTests|MaterializerTests|BackgroundMaterializationTests|ErrorTableTests|FaultInjectionTests|PullFaultTests|MalformedRequestTests|SchemaEvolutionTests|ConcurrentClientsTests|SeedExportTests|SeedExportStagingTests|ScopeCardinalityTests)/'
if [ "$#" -eq 0 ]; then
    SEEDKIT_TEST_SERVER_STORE=postgres swift test -Xswiftc -warnings-as-errors --no-parallel \
        --xunit-output "$out_dir/xunit-postgres.xml" --filter "$postgres_suites" 2>&1 | tee "$out_dir/output-postgres.log"
    postgres_status=${PIPESTATUS[0]}
    if [ "$status" -eq 0 ]; then status=$postgres_status; fi
fi

# The value of attribute $1 in the XML start tag $2 (0 when absent).
attr() {
    local v
    v=$(printf '%s' "$2" | sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p")
    echo "${v:-0}"
}

total=0
failed=0
found=0
for report in "$out_dir"/xunit*.xml; do
    [ -f "$report" ] || continue
    found=1
    while IFS= read -r line; do
        total=$((total + $(attr tests "$line")))
        failed=$((failed + $(attr failures "$line") + $(attr errors "$line")))
    done < <(grep -o '<testsuite [^>]*>' "$report")
done

if [ "$found" -eq 0 ]; then
    # No report means the run did not get as far as the tests (build failure or crash).
    echo "0 passed, 1 failed"
    exit $(( status == 0 ? 1 : status ))
fi
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
echo "$((total - failed)) passed, $failed failed"
exit "$status"
