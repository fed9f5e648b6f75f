package sparkbloom.shims

/** Spark 4.1 and 4.2: `parseRoutineParam` and `parsePlanWithParameters` (which carries bound parameters). */
trait ParserShims extends ParametersForwarding
