(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
(module (expression_statement (assignment left: (identifier) @name) @definition.constant))

(call function: [(identifier) @name (attribute attribute: (identifier) @name)]) @reference.call
(class_definition superclasses: (argument_list (identifier) @name)) @reference.class
