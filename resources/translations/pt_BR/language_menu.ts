<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>language_menu</name>
    <message>
        <source>Language</source>
        <translation>Idioma</translation>
    </message>
    <message>
        <source>{language} is the language in use</source>
        <translation>{language} é o idioma em uso</translation>
    </message>
    <message>
        <source>{language} takes effect when kvsim restarts</source>
        <translation>{language} passa a valer quando o kvsim for reiniciado</translation>
    </message>
</context>
</TS>
