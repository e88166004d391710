package dev.weir.reference;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

// Kafka 4.4 moved Exit into an internals package (the tools still call it).
import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs Kafka's command-line tools one after another in this one JVM, so that a test suite
 * making dozens of tool calls pays for JVM start-up and class loading once.
 *
 * Requests on stdin, one per line: the main class and its arguments separated by tabs.
 * Each answer on stdout: "EXIT status outBytes errBytes\n" followed by that many bytes of the
 * tool's stdout and then its stderr (UTF-8). Exit.exit and Exit.halt, which every Kafka tool
 * calls instead of System.exit, end the tool rather than this JVM, and the first status a tool
 * exits with is its status (some tools call Exit.exit inside a catch-all that reports the
 * unwinding and exits again with 1). System.out/err and Scala's Console are redirected per
 * call; log4j follows (log4j2-tools.properties, follow = true).
 */
public final class ToolRunner {
    /** Thrown through the tool by Exit.exit; an Error so that catch (Exception) lets it pass. */
    private static final class ToolExit extends Error {
        final int status;

        ToolExit(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    /** The status of the running tool's first Exit.exit, or null before it calls one. */
    private static Integer exitStatus;

    private static void exit(int status) {
        if (exitStatus == null) exitStatus = status;
        throw new ToolExit(status);
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = System.out;
        Exit.setExitProcedure((status, message) -> exit(status));
        Exit.setHaltProcedure((status, message) -> exit(status));
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = requests.readLine()) != null; ) {
            String[] fields = line.split("\t", -1);
            ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
            int status = run(fields[0], Arrays.copyOfRange(fields, 1, fields.length), out, err);
            byte[] outBytes = out.toByteArray(), errBytes = err.toByteArray();
            answers.print("EXIT " + status + " " + outBytes.length + " " + errBytes.length + "\n");
            answers.write(outBytes);
            answers.write(errBytes);
            answers.flush();
        }
    }

    private static int run(String mainClass, String[] args, ByteArrayOutputStream out, ByteArrayOutputStream err) {
        PrintStream realOut = System.out, realErr = System.err;
        PrintStream toolOut = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream toolErr = new PrintStream(err, true, StandardCharsets.UTF_8);
        System.setOut(toolOut);
        System.setErr(toolErr);
        int[] status = {0};
        exitStatus = null;
        try {
            scala.Console.withOut(toolOut, () -> scala.Console.withErr(toolErr, () -> {
                status[0] = invoke(mainClass, args, toolErr);
                return null;
            }));
        } finally {
            toolOut.flush();
            toolErr.flush();
            System.setOut(realOut);
            System.setErr(realErr);
        }
        return exitStatus != null ? exitStatus : status[0];
    }

    private static int invoke(String mainClass, String[] args, PrintStream err) {
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof ToolExit exit) return exit.status;
            cause.printStackTrace(err);
            return 1;
        } catch (ToolExit exit) {
            return exit.status;
        } catch (ReflectiveOperationException e) {
            e.printStackTrace(err);
            return 1;
        }
    }
}
