/// The built-in grouping rule set. It is data, not code: the same loader reads a user's file
/// (`stackline master --grouping-rules FILE`), and every fingerprint records `version`.
/// Change anything here and the version must change with it, because old and new
/// fingerprints of the same crash would no longer match.
enum DefaultRules {
    static let json = #"""
    {
      "name": "stackline-default",
      "version": 1,
      "maxFrames": 8,
      "inApp": {
        "comment": "An image is in-app when its name or path matches 'include', or when it matches no 'exclude' pattern. Globs (fnmatch), on the image's path and on its name.",
        "include": [
          "*/Bundle/Application/*",
          "*.app/*",
          "/data/app/*",
          "*.apk!*"
        ],
        "exclude": [
          "/System/*",
          "/usr/lib/*",
          "/usr/lib64/*",
          "/usr/libexec/*",
          "/lib/*",
          "/lib64/*",
          "/opt/swift/*",
          "*/usr/lib/swift/*",
          "/Developer/*",
          "/Library/Developer/*",
          "/apex/*",
          "/system/*",
          "/vendor/*",
          "libswift*",
          "libsystem_*",
          "libobjc*",
          "libdyld.dylib",
          "libc++*",
          "libc.so*",
          "libm.so*",
          "libstdc++*",
          "libgcc_s*",
          "ld-linux*",
          "linux-vdso*",
          "[vdso]",
          "dyld",
          "CoreFoundation",
          "Foundation",
          "UIKitCore",
          "GraphicsServices",
          "KSCrash*",
          "Sentry*",
          "CrashReporter*",
          "FirebaseCrashlytics*"
        ]
      },
      "skipTop": {
        "comment": "Crash-handling machinery: frames matching these are dropped from the top of the crashing stack only.",
        "functions": [
          "_sigtramp", "__restore_rt", "__kernel_rt_sigreturn", "<signal handler called>",
          "__pthread_kill", "pthread_kill", "__pthread_kill_implementation", "__pthread_kill_internal",
          "raise", "gsignal", "__GI_raise", "abort", "__GI_abort", "__abort", "abort_message",
          "__assert_rtn", "__assert_fail", "__assert_fail_base", "__assert", "__stack_chk_fail", "__chk_fail",
          "__fortify_fail", "__libc_message",
          "__cxa_throw", "__cxa_rethrow", "_Unwind_*", "std::terminate*", "std::__terminate*",
          "__cxxabiv1::*", "demangling_terminate_handler*", "__terminate*",
          "objc_exception_throw", "objc_exception_rethrow", "__exceptionPreprocess", "_objc_terminate*",
          "-[NSException raise]", "+[NSException raise:format:*", "-[NSAssertionHandler handleFailure*",
          "_assertionFailure(*", "_fatalErrorMessage(*", "fatalError(*",
          "closure * in _assertionFailure(*", "closure * in _fatalErrorMessage(*", "closure * in fatalError(*", "preconditionFailure(*",
          "assertionFailure(*", "precondition(*", "_precondition*", "_unimplementedInitializer*",
          "swift::fatalError*", "swift::fatalErrorv*", "swift_reportError*", "swift_unexpectedError*",
          "swift_deletedMethodError*", "swift_errorInMain*", "_swift_runtime_on_report*",
          "swift::warning*", "Swift runtime failure*",
          "KSCrash*", "kscrash*", "kscm_*", "ksmc_*", "SentryCrash*", "sentrycrash*", "PLCrashReporter*",
          "plcrash*", "__crashlytics*"
        ],
        "images": [
          "KSCrash*", "Sentry*", "CrashReporter*", "libsystem_c.dylib", "libsystem_kernel.dylib",
          "libsystem_platform.dylib"
        ]
      },
      "lag": {
        "comment": "docs/grouping.md, Lag keys: profile trees larger than maxProfileNodes are trimmed the way the SDK trims them: round k = 1...trimRounds drops nodes (with their subtrees) costing at most k x trimStepMs, until the tree fits.",
        "maxProfileDepth": 100,
        "maxProfileNodes": 500,
        "trimStepMs": 5,
        "trimRounds": 60
      }
    }
    """#
}
