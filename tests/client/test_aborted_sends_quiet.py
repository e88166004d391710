"""A transaction aborted with hundreds of sends still pending fails each send's future with the abort,
and leaves no "Future exception was never retrieved" on stderr for the futures nobody awaited (issue 18
item 4): the abort already told the application, as a Java send's Future holds its exception silently."""

import subprocess
import sys
import textwrap

from tests.support.topics import create_topic

SCRIPT = textwrap.dedent("""
    import asyncio, gc, sys
    from weir.client import Producer
    from weir.client.producer.transaction_manager import TransactionAbortedError

    async def main(bootstrap, topic):
        async with Producer(bootstrap, transactional_id="quiet-" + topic, linger_ms=60000) as producer:
            producer.begin_transaction()
            futures = [await producer.send(topic, b"x" * 10) for _ in range(400)]
            kept = futures[0]
            await producer.abort_transaction()
            assert all(f.done() for f in futures)
            del futures
            gc.collect()
            try:
                await kept
            except TransactionAbortedError:
                print("aborted as expected")  # an awaited future still raises the abort

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    gc.collect()
""")


def test_an_aborted_transaction_with_many_pending_sends_prints_no_warning(broker, topic_name):
    create_topic(broker.bootstrap, topic_name)
    run = subprocess.run([sys.executable, "-X", "dev", "-c", SCRIPT, broker.bootstrap, topic_name],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "aborted as expected" in run.stdout
    assert "Future exception was never retrieved" not in run.stderr, run.stderr
