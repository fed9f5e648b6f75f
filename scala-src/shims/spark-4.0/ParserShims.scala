package sparkbloom.shims

/** Spark 4.0's ParserInterface: the common methods plus `parseRoutineParam`. */
trait ParserShims extends RoutineParamForwarding
